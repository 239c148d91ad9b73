package redissync

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// A ledger records when each holder, by fencing token, knew it held a permit:
// from the return of its Acquire to its Release, or to the moment its lease
// could no longer be proven.
type ledger struct {
	mu     sync.Mutex
	spans  []span
	tokens map[int64]bool
}

type span struct {
	token      int64
	start, end time.Time
}

func (l *ledger) add(t *testing.T, token int64, start, end time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.tokens[token] {
		t.Errorf("token %d granted twice", token)
	}
	l.tokens[token] = true
	l.spans = append(l.spans, span{token, start, end})
}

// maxHolders returns the most spans that overlap at any instant; a span that
// ends as another starts does not overlap it.
func (l *ledger) maxHolders() int {
	type event struct {
		at    time.Time
		delta int
	}
	var events []event
	for _, s := range l.spans {
		events = append(events, event{s.start, 1}, event{s.end, -1})
	}
	slices.SortFunc(events, func(a, b event) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		return a.delta - b.delta // ends first
	})
	most, now := 0, 0
	for _, e := range events {
		now += e.delta
		most = max(most, now)
	}
	return most
}

// TestHammerRealRedis: 8 clients of 16 goroutines each contend for a
// Semaphore of 3 permits, and for a lock (whose holder is kept in a key of
// its own layout), with random cancellations, and one client stops renewing
// halfway, as if it crashed. At no instant more than N holders hold a lease
// they can prove, every token is unique, each goroutine's tokens increase,
// and no permit nor place in line is left after the run.
func TestHammerRealRedis(t *testing.T) {
	if testing.Short() {
		t.Skip("a few seconds")
	}
	addr := realRedis(t)
	if addr == "" {
		t.Skip("no redis-server on the PATH and no REDIS_ADDR")
	}
	for _, permits := range []int{3, 1} {
		t.Run(fmt.Sprintf("N=%d", permits), func(t *testing.T) {
			b := backend{name: "redis-server", addr: addr, prefix: fmt.Sprintf("hammer%d:", permits)}
			hammer(t, b, permits)
		})
	}
}

func hammer(t *testing.T, b backend, permits int) {
	const (
		clients    = 8
		goroutines = 16
		lease      = 1200 * time.Millisecond
		run        = 2 * time.Second
	)
	var sems []*Semaphore
	for i := range clients {
		// Half the clients end their round trips at the ctx's deadline:
		// their calls given up take another way (evalThen).
		c := redis.NewClient(&redis.Options{Addr: b.addr, DialTimeout: time.Second,
			ReadTimeout: time.Second, WriteTimeout: time.Second, MaxRetries: -1,
			ContextTimeoutEnabled: i%2 == 1})
		t.Cleanup(func() { _ = c.Close() })
		cfg := b.config(c, "hammer", permits, lease)
		// The race detector on a busy machine slows round trips far
		// beyond Redis's own time.
		cfg.Timeout = 300 * time.Millisecond
		sems = append(sems, mustNew(t, cfg))
	}
	crashed := sems[clients-1]
	led := &ledger{tokens: make(map[int64]bool)}
	var cancelled, unavailable, refused int
	var mu sync.Mutex
	stop := time.Now().Add(run)
	// At the crash, the client's waiters go too (their places leave at
	// once rather than lapse), and its holders stop renewing.
	crashCtx, crash := context.WithCancel(context.Background())
	defer crash()
	// It crashes holding a permit, for sure.
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		time.Sleep(run / 2)
		p, err := crashed.Acquire(context.Background())
		for errors.Is(err, ErrUnavailable) {
			p, err = crashed.Acquire(context.Background())
		}
		if err != nil {
			t.Errorf("Acquire: %v", err)
			return
		}
		start := time.Now()
		crashed.noRenew.Store(true)
		crash()
		<-p.Lost()
		led.add(t, p.Token(), start, p.lostAt)
	}()

	for c := range clients {
		for range goroutines {
			wg.Add(1)
			go func() {
				defer wg.Done()
				s := sems[c]
				last := int64(0)
				parent := context.Background()
				if s == crashed {
					parent = crashCtx
				}
				for time.Now().Before(stop) && parent.Err() == nil {
					ctx, cancel := parent, context.CancelFunc(func() {})
					switch rand.N(8) {
					case 0:
						ctx, cancel = context.WithCancel(ctx)
						cancel()
					case 1, 2:
						ctx, cancel = context.WithTimeout(ctx, rand.N(30*time.Millisecond))
					}
					// A quarter of the tries do not wait: TryAcquire,
					// which refuses with ErrWouldWait, never with a nil
					// Permit and a nil error.
					try := rand.N(4) == 0
					var p *Permit
					var err error
					if try {
						p, err = s.TryAcquire(ctx)
					} else {
						p, err = s.Acquire(ctx)
					}
					cancel()
					if (p == nil) == (err == nil) {
						t.Errorf("Acquire (TryAcquire %v) = %v, %v; want a Permit or an error, not both nor neither", try, p != nil, err)
						continue
					}
					if err != nil {
						mu.Lock()
						switch {
						case try && errors.Is(err, ErrWouldWait):
							refused++
							mu.Unlock()
							time.Sleep(rand.N(2 * time.Millisecond))
							continue
						case ctx.Err() != nil:
							cancelled++
						case errors.Is(err, ErrUnavailable):
							// The race detector on a loaded machine can
							// slow a round trip past the Timeout.
							unavailable++
						default:
							t.Errorf("Acquire: %v", err)
						}
						mu.Unlock()
						continue
					}
					start := time.Now()
					if p.Token() <= last {
						t.Errorf("a goroutine's token %d after %d", p.Token(), last)
					}
					last = p.Token()
					if s == crashed && s.noRenew.Load() {
						// Crashed: it never releases; its lease ends.
						<-p.Lost()
						led.add(t, p.Token(), start, p.lostAt)
						return
					}
					time.Sleep(rand.N(3 * time.Millisecond))
					if s == crashed && s.noRenew.Load() {
						<-p.Lost()
						led.add(t, p.Token(), start, p.lostAt)
						return
					}
					end := time.Now()
					select {
					case <-p.Lost():
						end = p.lostAt
					default:
					}
					// Now and then a Release's ctx ends as it runs: its
					// script may run with its reply lost, and the waiters
					// it handed the permit to must be woken all the same.
					rctx, rcancel := context.Background(), context.CancelFunc(func() {})
					if rand.N(8) == 0 {
						rctx, rcancel = context.WithTimeout(rctx, rand.N(2*time.Millisecond))
					}
					err = p.Release(rctx)
					// (A client that ends its read at the deadline may do
					// so a moment before rctx's own timer ends rctx.)
					if err != nil && !errors.Is(err, ErrLost) && !errors.Is(err, ErrUnavailable) && rctx.Err() == nil &&
						!errors.Is(err, context.DeadlineExceeded) {
						t.Errorf("Release: %v", err)
					}
					rcancel()
					led.add(t, p.Token(), start, end)
				}
			}()
		}
	}
	wg.Wait()

	if most := led.maxHolders(); most > permits {
		t.Errorf("%d holders at once, of %d permits", most, permits)
	}
	if len(led.spans) < 50 {
		t.Errorf("only %d acquisitions", len(led.spans))
	}
	t.Logf("%d acquisitions, %d cancelled, %d failed for Redis's slowness, %d TryAcquires refused, most holders at once %d",
		len(led.spans), cancelled, unavailable, refused, led.maxHolders())

	// Nothing stranded: every permit free again, and the line empty, once
	// the leases of the crashed client have ended.
	time.Sleep(lease)
	ctx := context.Background()
	var ps []*Permit
	for range permits {
		p, err := sems[0].TryAcquire(ctx)
		if err != nil || p == nil {
			t.Fatalf("after the run, a permit is stranded: %v, %v", p, err)
		}
		ps = append(ps, p)
	}
	for _, p := range ps {
		if err := p.Release(ctx); err != nil {
			t.Error(err)
		}
	}
	if held, queued := counts(t, sems[0]); held != 0 || queued != 0 {
		t.Errorf("after the run: %d held, %d queued", held, queued)
	}
}
