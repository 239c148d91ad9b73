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
