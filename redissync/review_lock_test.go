package redissync

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestLockYearLease: a lock whose Lease is the longest allowed (a year) is
// taken, handed to a waiter of another process (its key's PX a year), claimed
// again after a missed message, renewed and given back.
func TestLockYearLease(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			holder := mustNew(t, b.config(b.client(t), "year", 1, maxLease))
			w := mustNew(t, b.config(b.client(t), "year", 1, maxLease))
			p, err := holder.Acquire(ctx)
			if err != nil {
				t.Fatal(err)
			}
			id := w.newID()
			if r, err := w.attempt(ctx, id, w.entryArg, false); err != nil || r.granted {
				t.Fatalf("first attempt: %+v, %v; want in line", r, err)
			}
			if err := p.Release(ctx); err != nil {
				t.Fatal(err)
			}
			end, ok := holderEnd(t, w, id)
			if !ok || time.Until(end) < maxLease-time.Hour {
				t.Fatalf("handed for a year: held %v, until %v", ok, end)
			}
			r, err := w.attempt(ctx, id, w.entryArg, true)
			if err != nil || !r.granted || r.left != maxLease {
				t.Fatalf("claimed: %+v, %v", r, err)
			}
			q := w.newPermit(ctx, id, r.token, w.validUntil(time.Now(), r.left))
			if renewed, err := q.renew(ctx); err != nil || !renewed {
				t.Fatalf("renew: %v, %v", renewed, err)
			}
			if err := q.Release(ctx); err != nil {
				t.Fatal(err)
			}
			if held, queued := counts(t, w); held != 0 || queued != 0 {
				t.Errorf("after the run: %d held, %d queued", held, queued)
			}
		})
	}
}

// TestLockCrashedHolderNewcomerKeepsBehindTheLine: a lock's holder crashes
// (stops renewing) with a waiter of another process in line between its
// polls; once the lease has ended, a newcomer's Acquire and TryAcquire do
// not take the lock ahead of that waiter: the lock goes to the waiter.
func TestLockCrashedHolderNewcomerKeepsBehindTheLine(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			// The crashed holder's lease must outlast the waiter's
			// attempt (a round trip, which a loaded machine may hold up
			// for most of a second), and is waited out after it: a second.
			// It renews nothing, so its Timeout can be longer than Config
			// allows (see longTimeout): the default, a quarter of the
			// Lease, failed its Acquire on a loaded machine.
			cfg := b.config(b.roomyClient(t), "crashline", 1, time.Second)
			cfg.Poll = time.Hour
			crashed := mustNew(t, cfg)
			crashed.noRenew.Store(true)
			longTimeout(crashed)
			cfg.Client = b.roomyClient(t)
			// The newcomer's Lease is long: the lock it hands to the waiter
			// (whose id names no Lease) is held for it, and must outlast the
			// checks below however slow a loaded machine makes them.
			cfg.Lease, cfg.Timeout = roomyLease, roomyTimeout
			newcomer := mustNew(t, cfg)
			p, err := crashed.Acquire(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if r, err := newcomer.attempt(ctx, "waiter", newcomer.entryArg, false); err != nil || r.granted {
				t.Fatalf("the waiter's attempt: %+v, %v", r, err)
			}
			<-p.Lost()
			for _, ok := holderEnd(t, crashed, p.id); ok; _, ok = holderEnd(t, crashed, p.id) {
				time.Sleep(time.Millisecond)
			}
			if q, err := newcomer.TryAcquire(ctx); q != nil || !errors.Is(err, ErrWouldWait) {
				t.Fatalf("TryAcquire ahead of a waiter: %v, %v; want none, ErrWouldWait", q != nil, err)
			}
			if _, ok := holderEnd(t, newcomer, "waiter"); !ok {
				t.Fatal("the waiter was not handed the lock")
			}
			actx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
			q, err := newcomer.Acquire(actx)
			cancel()
			if q != nil || !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("Acquire while the waiter holds: %v, %v", q != nil, err)
			}
			if held, err := newcomer.release(ctx, "waiter"); err != nil || !held {
				t.Errorf("the waiter's release: %v, %v", held, err)
			}
			if held, queued := counts(t, newcomer); held != 0 || queued != 0 {
				t.Errorf("after the run: %d held, %d queued", held, queued)
			}
		})
	}
}

// TestLockUnclaimedHandoffLapses: a lock handed to a waiter whose process
// never claims it frees itself at the end of that waiter's Lease (the one
// its id carries, not the releaser's), and goes to the next in line, with a
// higher token.
func TestLockUnclaimedHandoffLapses(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			holder := mustNew(t, b.config(b.client(t), "unclaimed", 1, time.Minute))
			next := mustNew(t, b.config(b.client(t), "unclaimed", 1, time.Minute))
			p, err := holder.Acquire(ctx)
			if err != nil {
				t.Fatal(err)
			}
			// A waiter of another process, with a Lease of 50ms, that dies
			// in line.
			const dead = "0123abcd/50/1"
			if r, err := holder.attempt(ctx, dead, holder.entryArg, false); err != nil || r.granted {
				t.Fatalf("the waiter's attempt: %+v, %v", r, err)
			}
			got := make(chan *Permit, 1)
			go func() {
				q, err := next.Acquire(ctx)
				if err != nil {
					t.Error(err)
				}
				got <- q
			}()
			waitQueued(t, holder, 2)
			if err := p.Release(ctx); err != nil {
				t.Fatal(err)
			}
			if end, ok := holderEnd(t, holder, dead); !ok || time.Until(end) > 100*time.Millisecond {
				t.Fatalf("handed to the dead waiter: %v, until %v; want its own 50ms lease", ok, end)
			}
			if q, err := holder.TryAcquire(ctx); q != nil || !errors.Is(err, ErrWouldWait) {
				t.Fatalf("TryAcquire while handed: %v, %v; want none, ErrWouldWait", q != nil, err)
			}
			select {
			case q := <-got:
				if q == nil {
					t.Fatal("no permit")
				}
				if q.Token() <= p.Token()+1 {
					t.Errorf("token %d after %d and the one handed", q.Token(), p.Token())
				}
				if err := q.Release(ctx); err != nil {
					t.Error(err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the next waiter never got the lock")
			}
			if held, queued := counts(t, holder); held != 0 || queued != 0 {
				t.Errorf("after the run: %d held, %d queued", held, queued)
			}
		})
	}
}

// inFlightConn delays the bytes of the scripts named while armed, as a slow
// network would: the write returns at once, and the bytes reach Redis
// later, even after the client gave up and closed the connection.
type inFlightConn struct {
	net.Conn
	armed   *atomic.Bool
	scripts []*redis.Script
	pending sync.WaitGroup
}

func (c *inFlightConn) delays(b []byte) bool {
	if !c.armed.Load() {
		return false
	}
	for _, sc := range c.scripts {
		if bytes.Contains(b, []byte(sc.Hash())) {
			return true
		}
	}
	return false
}

// inFlightClient returns a client that honours ctx deadlines and whose
// connections delay the scripts named while armed.
func inFlightClient(t *testing.T, addr string, armed *atomic.Bool, scripts ...*redis.Script) *redis.Client {
	return inFlightClientRT(t, addr, 2*time.Second, armed, scripts...)
}

// inFlightClientRT is inFlightClient with a ReadTimeout (and WriteTimeout)
// of rt: the take-back of a given-up attempt comes that long after it.
func inFlightClientRT(t *testing.T, addr string, rt time.Duration, armed *atomic.Bool, scripts ...*redis.Script) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: addr, DialTimeout: time.Second,
		ReadTimeout: rt, WriteTimeout: rt, MaxRetries: -1,
		ContextTimeoutEnabled: true,
		Dialer: func(ctx context.Context, network, addr string) (net.Conn, error) {
			conn, err := (&net.Dialer{}).DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return &inFlightConn{Conn: conn, armed: armed, scripts: scripts}, nil
		}})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func (c *inFlightConn) Write(b []byte) (int, error) {
	if c.delays(b) {
		buf := bytes.Clone(b)
		c.pending.Add(1)
		go func() {
			defer c.pending.Done()
			time.Sleep(300 * time.Millisecond)
			_ = c.Conn.SetWriteDeadline(time.Time{})
			_, _ = c.Conn.Write(buf)
		}()
		return len(b), nil
	}
	return c.Conn.Write(b)
}

// Close returns at once, as a socket's does; the bytes in flight still go.
func (c *inFlightConn) Close() error {
	go func() {
		c.pending.Wait()
		_ = c.Conn.Close()
	}()
	return nil
}

// TestCtxDeadlineBeforeTimeoutGivesCtxErr: with a client that ends its round
// trips at the ctx's deadline, a call whose ctx's deadline comes before the
// Timeout returns ctx.Err() (context.DeadlineExceeded), as documented, not
// an error matching ErrUnavailable: the client's read gives up at the very
// deadline, a moment before the ctx says it ended.
func TestCtxDeadlineBeforeTimeoutGivesCtxErr(t *testing.T) {
	for _, b := range backends(t) {
		for n := 1; n <= 2; n++ {
			t.Run(fmt.Sprintf("%s/N=%d", b.name, n), func(t *testing.T) {
				var armed atomic.Bool
				c := inFlightClient(t, b.addr, &armed, setRelease, lockRelease, lockGive)
				cfg := b.config(c, fmt.Sprintf("deadline%d", n), n, time.Minute)
				cfg.Timeout = time.Second
				s := mustNew(t, cfg)
				ctx := context.Background()
				q, err := s.Acquire(ctx) // the scripts loaded: the Release runs by its hash
				if err != nil {
					t.Fatal(err)
				}
				if err := q.Release(ctx); err != nil {
					t.Fatal(err)
				}
				for range 3 {
					p, err := s.Acquire(ctx)
					if err != nil {
						t.Fatal(err)
					}
					armed.Store(true)
					rctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
					err = p.Release(rctx)
					cancel()
					armed.Store(false)
					if !errors.Is(err, context.DeadlineExceeded) {
						t.Fatalf("Release past its ctx's deadline: %v; want context.DeadlineExceeded", err)
					}
					// The Release lands, 300 ms late: awaited, not slept
					// for, as a loaded machine holds the bytes up longer.
					// Never landed, it would leave the permit held for the
					// Lease, a minute.
					awaitEmpty(t, s, 20*time.Second, "after a Release landed late")
				}
			})
		}
	}
}

// TestMismatchedNNeverOverlaps: processes that disagree on N (unsupported,
// but what a rolling deploy that changes N from 1 to 2 makes) must not hold
// a lock and a Semaphore's permits of the Name at once: a lock held shuts
// out the Semaphore of 2, and permits held shut out the lock, by a refusal
// or an error, never a grant.
func TestMismatchedNNeverOverlaps(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			lock := mustNew(t, b.config(b.client(t), "mismatch", 1, time.Minute))
			sem := mustNew(t, b.config(b.client(t), "mismatch", 2, time.Minute))
			p, err := lock.Acquire(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if q, _ := sem.TryAcquire(ctx); q != nil {
				t.Errorf("a Semaphore of 2 granted a permit (token %d) while a lock of its Name is held", q.Token())
				_ = q.Release(ctx)
			}
			if err := p.Release(ctx); err != nil {
				t.Fatal(err)
			}
			q, err := sem.Acquire(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if r, _ := lock.TryAcquire(ctx); r != nil {
				t.Errorf("a lock granted (token %d) while a Semaphore of its Name holds a permit", r.Token())
				_ = r.Release(ctx)
			}
			actx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
			r, err := lock.Acquire(actx)
			cancel()
			if r != nil {
				t.Errorf("a lock's Acquire granted (token %d) while a Semaphore of its Name holds a permit", r.Token())
				_ = r.Release(ctx)
			} else if err == nil {
				t.Error("no permit and no error")
			} else {
				t.Logf("the lock's Acquire: %v", err)
			}
			_ = q.Release(ctx)
		})
	}
}

// TestLockRenewLandingAfterRelease: a renewal that reaches Redis after its
// permit's Release (it was on its way, on another connection) renews
// nothing: not the lock handed to the next in line, nor a free lock.
func TestLockRenewLandingAfterRelease(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			s := mustNew(t, b.config(b.client(t), "renewlate", 1, time.Minute))
			p, err := s.Acquire(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if r, err := s.attempt(ctx, "next", s.entryArg, false); err != nil || r.granted {
				t.Fatalf("the next waiter: %+v, %v", r, err)
			}
			if err := p.Release(ctx); err != nil {
				t.Fatal(err)
			}
			if renewed, err := p.renew(ctx); err != nil || renewed {
				t.Errorf("a renewal after Release, the lock handed on: %v, %v; want not renewed", renewed, err)
			}
			if end, ok := holderEnd(t, s, "next"); !ok || time.Until(end) > time.Minute {
				t.Errorf("the next holder's lease: %v until %v", ok, end)
			}
			if held, err := s.release(ctx, "next"); err != nil || !held {
				t.Fatalf("the next holder's release: %v, %v", held, err)
			}
			if renewed, err := p.renew(ctx); err != nil || renewed {
				t.Errorf("a renewal after Release, the lock free: %v, %v; want not renewed", renewed, err)
			}
			if held, queued := counts(t, s); held != 0 || queued != 0 {
				t.Errorf("after the run: %d held, %d queued", held, queued)
			}
		})
	}
}

// TestForeignIdWithHugeLeaseInLine: an entry in the line whose id claims a
// lease beyond a year (not one of ours: a bad actor or another version) is
// handed the lock for the releaser's Lease, not refused by Redis (SET PX
// errs on so long a time), which would fail every hand-over of the Name.
func TestForeignIdWithHugeLeaseInLine(t *testing.T) {
	for _, b := range backends(t) {
		for n := 1; n <= 2; n++ {
			t.Run(fmt.Sprintf("%s/N=%d", b.name, n), func(t *testing.T) {
				ctx := context.Background()
				s := mustNew(t, b.config(b.client(t), fmt.Sprintf("hugeid%d", n), n, time.Second))
				var ps []*Permit
				for range n {
					p, err := s.Acquire(ctx)
					if err != nil {
						t.Fatal(err)
					}
					ps = append(ps, p)
				}
				const id = "abcdef/999999999999999/1"
				if r, err := s.attempt(ctx, id, s.entryArg, false); err != nil || r.granted {
					t.Fatalf("attempt: %+v, %v; want in line", r, err)
				}
				if err := ps[0].Release(ctx); err != nil {
					t.Fatalf("Release handing to it: %v", err)
				}
				end, ok := holderEnd(t, s, id)
				if !ok {
					t.Fatal("the entry was not handed the permit")
				}
				if left := time.Until(end); left > time.Minute {
					t.Errorf("handed for %v", left)
				}
				if held, err := s.release(ctx, id); err != nil || !held {
					t.Errorf("release: %v, %v", held, err)
				}
				for _, p := range ps[1:] {
					_ = p.Release(ctx)
				}
			})
		}
	}
}
