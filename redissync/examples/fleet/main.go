// Command fleet shows redissync as the instances of a service use it: one
// instance runs the nightly report, at most two call a licensed API at once,
// and a store refuses a write that arrives after its writer's turn has
// passed. The instances are goroutines here, each with a Redis client of its
// own, as separate processes would have.
//
// It talks to the Redis at REDIS_ADDR when that is set, and to an embedded
// one (miniredis) otherwise. From the redissync directory:
//
//	go run ./examples/fleet
//	REDIS_ADDR=localhost:6379 go run ./examples/fleet
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/ctxsync/ctxsync/redissync"
)

const instances = 4

func main() {
	addr := os.Getenv("REDIS_ADDR")
	if addr == "" {
		srv := miniredis.NewMiniRedis()
		srv.ClockTTL(true) // keys expire as time passes, as in Redis: leases end
		if err := srv.Start(); err != nil {
			log.Fatal(err)
		}
		defer srv.Close()
		addr = srv.Addr()
		fmt.Println("using an embedded Redis (set REDIS_ADDR to use yours)")
	}
	if err := run(context.Background(), addr, os.Stdout); err != nil {
		log.Fatal(err)
	}
}

// run runs the three scenes against the Redis at addr.
func run(ctx context.Context, addr string, out io.Writer) error {
	// Each run has names of its own, so that runs against one Redis do not meet.
	prefix := fmt.Sprintf("fleet-example:%d:", time.Now().UnixNano())
	newSem := func(name string, n int) (*redissync.Semaphore, func(), error) {
		// The client ends a round trip at the call's deadline itself: each
		// runs on the caller's goroutine (see the package's doc).
		c := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true})
		s, err := redissync.New(redissync.Config{Client: c, Name: name, N: n, Lease: 10 * time.Second, Prefix: prefix})
		return s, func() { _ = c.Close() }, err
	}
	for _, scene := range []func(context.Context, func(string, int) (*redissync.Semaphore, func(), error)) (string, error){
		nightlyReport, licensedAPI, fencedWrites,
	} {
		line, err := scene(ctx, newSem)
		if err != nil {
			return err
		}
		fmt.Fprintln(out, line)
	}
	return nil
}

// nightlyReport: every instance tries the lock at once; the one that takes
// it runs the report, the others go on.
func nightlyReport(ctx context.Context, newSem func(string, int) (*redissync.Semaphore, func(), error)) (string, error) {
	var ran, skipped atomic.Int32
	var tried sync.WaitGroup // the holder keeps the lock until all have tried
	tried.Add(instances)
	errs := make(chan error, instances)
	var wg sync.WaitGroup
	for range instances {
		lock, done, err := newSem("nightly-report", 1)
		if err != nil {
			return "", err
		}
		defer done()
		wg.Go(func() {
			p, err := lock.TryAcquire(ctx)
			tried.Done()
			if errors.Is(err, redissync.ErrWouldWait) {
				skipped.Add(1) // another instance holds it: not an error
				return
			}
			if err != nil {
				errs <- err
				return
			}
			ran.Add(1) // the report runs here, under p.Context()
			tried.Wait()
			errs <- p.Release(ctx)
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			return "", err
		}
	}
	return fmt.Sprintf("nightly report: run by %d instance, skipped by %d", ran.Load(), skipped.Load()), nil
}

// licensedAPI: each instance makes calls that at most two may make at once,
// across the fleet.
func licensedAPI(ctx context.Context, newSem func(string, int) (*redissync.Semaphore, func(), error)) (string, error) {
	const perInstance = 3
	var now, most atomic.Int32
	errs := make(chan error, instances*perInstance)
	var wg sync.WaitGroup
	for range instances {
		sem, done, err := newSem("licensed-api", 2)
		if err != nil {
			return "", err
		}
		defer done()
		for range perInstance {
			wg.Go(func() {
				ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
				defer cancel()
				p, err := sem.Acquire(ctx)
				if err != nil {
					errs <- err
					return
				}
				n := now.Add(1)
				for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
				}
				time.Sleep(20 * time.Millisecond) // the call
				now.Add(-1)
				errs <- p.Release(ctx)
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			return "", err
		}
	}
	return fmt.Sprintf("licensed API: %d calls from %d instances, at most %d at once", instances*perInstance, instances, most.Load()), nil
}

// fencedWrites: a write held up in the network reaches the store after its
// writer released the lock and another took it. The store checks fencing
// tokens, so the late write is refused rather than undoing the newer one.
func fencedWrites(ctx context.Context, newSem func(string, int) (*redissync.Semaphore, func(), error)) (string, error) {
	store := &fencedStore{}
	a, doneA, err := newSem("ledger", 1)
	if err != nil {
		return "", err
	}
	defer doneA()
	b, doneB, err := newSem("ledger", 1)
	if err != nil {
		return "", err
	}
	defer doneB()

	p, err := a.Acquire(ctx)
	if err != nil {
		return "", err
	}
	late := func() error { return store.write(p.Token(), "balance 90") } // sent, held up
	if err := p.Release(ctx); err != nil {
		return "", err
	}
	q, err := b.Acquire(ctx)
	if err != nil {
		return "", err
	}
	if err := store.write(q.Token(), "balance 120"); err != nil {
		return "", err
	}
	if err := q.Release(ctx); err != nil {
		return "", err
	}
	refused := late()
	if refused == nil {
		return "", errors.New("the store took a write from a turn that had passed")
	}
	return fmt.Sprintf("ledger: %q kept; the late write refused (%v)", store.value, refused), nil
}

// fencedStore is a resource that checks fencing tokens: it refuses a write
// whose token is below the highest it has seen.
type fencedStore struct {
	mu      sync.Mutex
	highest int64
	value   string
}

func (s *fencedStore) write(token int64, value string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if token < s.highest {
		return fmt.Errorf("token %d, below %d", token, s.highest)
	}
	s.highest, s.value = token, value
	return nil
}
