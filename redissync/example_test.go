package redissync_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/ctxsync/ctxsync/redissync"
)

// A fleet-wide bound: at most 20 calls at once to a licensed API, whatever
// the number of instances making them.
func ExampleSemaphore() {
	srv, _ := miniredis.Run() // a real deployment uses its Redis
	srv.ClockTTL(true)        // keys expire as time passes, as in Redis: leases end
	defer srv.Close()
	client := redis.NewClient(&redis.Options{Addr: srv.Addr(), ContextTimeoutEnabled: true})
	defer client.Close()

	sem, err := redissync.New(redissync.Config{
		Client: client,
		Name:   "licensed-api",
		N:      20,
		Lease:  10 * time.Second,
	})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	p, err := sem.Acquire(ctx)
	if err != nil {
		fmt.Println("no permit:", err) // ctx ended, or Redis unavailable
		return
	}
	defer p.Release(ctx)
	// Call the API with p.Context(): it is cancelled if the lease is lost.
	fmt.Println("calling, with permit", p.Token())
	// Output: calling, with permit 1
}

// One instance runs the nightly job; the store it writes to checks the
// fencing token, so that an instance that paused past its lease is refused.
func ExampleNewLock() {
	srv, _ := miniredis.Run()
	defer srv.Close()
	client := redis.NewClient(&redis.Options{Addr: srv.Addr(), ContextTimeoutEnabled: true})
	defer client.Close()

	lock, err := redissync.NewLock(redissync.Config{Client: client, Name: "nightly-job", Lease: 30 * time.Second})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	p, err := lock.TryAcquire(ctx)
	switch {
	case errors.Is(err, redissync.ErrWouldWait):
		fmt.Println("another instance runs it")
		return
	case err != nil:
		fmt.Println("Redis unavailable:", err)
		return
	}
	defer p.Release(ctx)

	store := &fencedStore{}
	fmt.Println(store.write(p.Token(), "report"))
	fmt.Println(store.write(p.Token()-1, "stale")) // a holder from before
	select {
	case <-p.Lost():
		fmt.Println("lease lost: stop")
	default:
	}
	// Output:
	// <nil>
	// token 0 refused: 1 seen
}

// fencedStore is a resource that checks fencing tokens: it refuses a write
// with a token lower than the highest it has seen.
type fencedStore struct{ highest int64 }

func (s *fencedStore) write(token int64, _ string) error {
	if token < s.highest {
		return fmt.Errorf("token %d refused: %d seen", token, s.highest)
	}
	s.highest = token
	return nil
}

func ExamplePermit_Lost() {
	srv, _ := miniredis.Run()
	defer srv.Close()
	client := redis.NewClient(&redis.Options{Addr: srv.Addr(), ContextTimeoutEnabled: true})
	defer client.Close()

	lock, _ := redissync.NewLock(redissync.Config{Client: client, Name: "job", Lease: time.Second})
	ctx := context.Background()
	p, err := lock.Acquire(ctx)
	if err != nil {
		panic(err)
	}
	client.FlushAll(ctx) // the lease vanishes behind the holder's back

	<-p.Lost() // at the next renewal, a third of a lease later
	fmt.Println(context.Cause(p.Context()))
	fmt.Println(p.Release(ctx))
	// Output:
	// redissync: lease lost
	// redissync: lease lost
}

// TryAcquire does not wait: when another instance holds the lock, it
// returns ErrWouldWait, and no Permit.
func ExampleSemaphore_TryAcquire() {
	srv, _ := miniredis.Run()
	srv.ClockTTL(true)
	defer srv.Close()
	client := redis.NewClient(&redis.Options{Addr: srv.Addr(), ContextTimeoutEnabled: true})
	defer client.Close()

	// Two instances of a service, each with its own Semaphore of the Name.
	cfg := redissync.Config{Client: client, Name: "nightly-job", Lease: 30 * time.Second}
	a, err := redissync.NewLock(cfg)
	if err != nil {
		panic(err)
	}
	b, err := redissync.NewLock(cfg)
	if err != nil {
		panic(err)
	}
	ctx := context.Background()

	p, err := a.TryAcquire(ctx)
	if err != nil {
		panic(err)
	}
	fmt.Println("a runs the job, token", p.Token())

	q, err := b.TryAcquire(ctx)
	switch {
	case errors.Is(err, redissync.ErrWouldWait):
		fmt.Println("b skips it:", err) // q is nil: nothing to release
	case err != nil:
		fmt.Println("Redis unavailable:", err)
	default:
		defer q.Release(ctx)
		fmt.Println("b runs the job too") // never, while a holds it
	}

	if err := p.Release(ctx); err != nil {
		panic(err)
	}
	q, err = b.TryAcquire(ctx)
	if err != nil {
		panic(err)
	}
	defer q.Release(ctx)
	fmt.Println("once a is done, b runs it, token", q.Token())
	// Output:
	// a runs the job, token 1
	// b skips it: redissync: TryAcquire would wait: no permit is free, or a waiter is in line
	// once a is done, b runs it, token 2
}

// A Semaphore of 2 permits: two holders at once, and a third waits in line
// in Acquire until one of them releases.
func ExampleNew() {
	srv, _ := miniredis.Run()
	srv.ClockTTL(true)
	defer srv.Close()
	client := redis.NewClient(&redis.Options{Addr: srv.Addr(), ContextTimeoutEnabled: true})
	defer client.Close()

	sem, err := redissync.New(redissync.Config{Client: client, Name: "licensed-api", N: 2, Lease: 10 * time.Second})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	first, err := sem.Acquire(ctx)
	if err != nil {
		panic(err)
	}
	second, err := sem.Acquire(ctx)
	if err != nil {
		panic(err)
	}
	fmt.Println("holding", sem.N(), "permits, tokens", first.Token(), "and", second.Token())

	type result struct {
		p   *redissync.Permit
		err error
	}
	third := make(chan result)
	go func() {
		// Waits: both permits are held. A real caller bounds the wait
		// with its ctx's deadline.
		p, err := sem.Acquire(ctx)
		third <- result{p, err}
	}()

	if err := first.Release(ctx); err != nil { // hands the permit to the waiter
		panic(err)
	}
	r := <-third
	if r.err != nil {
		panic(r.err)
	}
	fmt.Println("the third caller holds a permit")
	for _, p := range []*redissync.Permit{second, r.p} {
		if err := p.Release(ctx); err != nil {
			panic(err)
		}
	}
	// Output:
	// holding 2 permits, tokens 1 and 2
	// the third caller holds a permit
}

// Work done under a permit runs on the Permit's Context, which is cancelled
// the moment the lease can no longer be proven: the work stops rather than
// go on while another instance may hold the permit.
func ExamplePermit_Context() {
	srv, _ := miniredis.Run()
	srv.ClockTTL(true)
	defer srv.Close()
	client := redis.NewClient(&redis.Options{Addr: srv.Addr(), ContextTimeoutEnabled: true})
	defer client.Close()

	lock, err := redissync.NewLock(redissync.Config{Client: client, Name: "reindex", Lease: time.Second})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	p, err := lock.Acquire(ctx)
	if err != nil {
		panic(err)
	}

	// reindex stands for a long job that honours its ctx, as an HTTP
	// request or a database query does.
	reindex := func(ctx context.Context) error {
		<-ctx.Done()
		return context.Cause(ctx)
	}
	client.FlushAll(ctx) // the lease vanishes behind the holder's back

	err = reindex(p.Context()) // ended at the next renewal, a third of a lease later
	fmt.Println("reindex stopped:", err, errors.Is(err, redissync.ErrLost))
	fmt.Println("release:", p.Release(ctx))
	// Output:
	// reindex stopped: redissync: lease lost true
	// release: redissync: lease lost
}

// Fencing tokens: the resource a lock protects remembers the highest token
// it has seen and refuses a lower one, so that a holder whose request was
// held up past its turn cannot undo the work of the holder after it.
func ExamplePermit_Token() {
	srv, _ := miniredis.Run()
	srv.ClockTTL(true)
	defer srv.Close()
	client := redis.NewClient(&redis.Options{Addr: srv.Addr(), ContextTimeoutEnabled: true})
	defer client.Close()

	cfg := redissync.Config{Client: client, Name: "ledger", Lease: 10 * time.Second}
	a, _ := redissync.NewLock(cfg) // two instances of a service
	b, _ := redissync.NewLock(cfg)
	store := &fencedStore{}
	ctx := context.Background()

	p, err := a.Acquire(ctx)
	if err != nil {
		panic(err)
	}
	late := p.Token() // a sends a write with it, which the network holds up
	if err := p.Release(ctx); err != nil {
		panic(err)
	}

	q, err := b.Acquire(ctx)
	if err != nil {
		panic(err)
	}
	fmt.Println("b writes with token", q.Token(), "->", store.write(q.Token(), "balance 120"))
	if err := q.Release(ctx); err != nil {
		panic(err)
	}

	fmt.Println("a's write arrives ->", store.write(late, "balance 90"))
	// Output:
	// b writes with token 2 -> <nil>
	// a's write arrives -> token 1 refused: 2 seen
}

// Release gives the permit back at once, so that the next in line need not
// wait for the lease to end. Give it a ctx that has not ended: with a done
// ctx it fails at once, and the permit stays held until its lease ends.
func ExamplePermit_Release() {
	srv, _ := miniredis.Run()
	srv.ClockTTL(true)
	defer srv.Close()
	client := redis.NewClient(&redis.Options{Addr: srv.Addr(), ContextTimeoutEnabled: true})
	defer client.Close()

	cfg := redissync.Config{Client: client, Name: "report", Lease: time.Minute}
	lock, _ := redissync.NewLock(cfg)
	other, _ := redissync.NewLock(cfg) // another instance

	reqCtx, cancel := context.WithCancel(context.Background())
	p, err := lock.Acquire(reqCtx)
	if err != nil {
		panic(err)
	}
	cancel() // the request is cancelled while it holds the permit

	// Not reqCtx, which has ended: its values, with a bound of its own.
	ctx, stop := context.WithTimeout(context.WithoutCancel(reqCtx), time.Second)
	defer stop()
	err = p.Release(ctx)
	switch {
	case errors.Is(err, redissync.ErrLost):
		fmt.Println("the lease had ended: another may have held it meanwhile")
	case err != nil:
		fmt.Println("not released; it frees itself when its lease ends:", err)
	default:
		fmt.Println("released")
	}

	q, err := other.TryAcquire(ctx)
	if err != nil {
		panic(err)
	}
	defer q.Release(ctx)
	fmt.Println("the other instance takes it at once, token", q.Token())
	// Output:
	// released
	// the other instance takes it at once, token 2
}
