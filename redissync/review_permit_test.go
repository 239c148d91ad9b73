package redissync

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redis/go-redis/v9"
)

// These tests try a Permit's renewals and Release, and the waiters'
// subscription, at their edges: short leases, a renewal that times out,
// Redis stopped or its pub/sub connection killed, Release racing a renewal.

// renewalHook is a client hook that passes each renewal's call to hold
// before running it: hold returns an error to fail the call with (as a reply
// that came too late would), or nil to let it run. Every other call goes
// through.
type renewalHook func(ctx context.Context) error

func (h renewalHook) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h renewalHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
func (h renewalHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if args := cmd.Args(); len(args) > 1 {
			if src, _ := args[1].(string); src == lockRenew.Hash() || src == setRenew.Hash() {
				if err := h(ctx); err != nil {
					cmd.SetErr(err)
					return err
				}
			}
		}
		return next(ctx, cmd)
	}
}

// answeringRedis is a client hook that stands for a Redis on which every
// script grants, renews or releases at once, without the network, so that
// a Semaphore of its client works in a synctest bubble, on virtual time.
// hold, if set, is passed each renewal before it is answered, as
// renewalHook's function is.
type answeringRedis struct {
	hold     renewalHook
	token    atomic.Int64
	renewals atomic.Int64 // renewals answered
}

func (h *answeringRedis) DialHook(next redis.DialHook) redis.DialHook { return next }

// ProcessPipelineHook answers each command of a pipeline as ProcessHook
// does: a call made while another's round trip is under way goes in one.
func (h *answeringRedis) ProcessPipelineHook(redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		var first error
		for _, cmd := range cmds {
			if err := h.ProcessHook(nil)(ctx, cmd); err != nil {
				cmd.SetErr(err)
				first = cmp.Or(first, err)
			}
		}
		return first
	}
}

func (h *answeringRedis) ProcessHook(redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c, ok := cmd.(*redis.Cmd)
		args := cmd.Args()
		if !ok || len(args) < 2 {
			return fmt.Errorf("answeringRedis: unexpected command %v", args)
		}
		switch src, _ := args[1].(string); src {
		case lockTake.Hash(), lockAcquire.Hash(), setAcquire.Hash():
			c.SetVal(h.token.Add(1)) // granted on the spot
		case lockRenew.Hash(), setRenew.Hash():
			if h.hold != nil {
				if err := h.hold(ctx); err != nil {
					c.SetErr(err)
					return err
				}
			}
			h.renewals.Add(1)
			c.SetVal(int64(1)) // renewed
		case lockGive.Hash(), lockRelease.Hash(), setRelease.Hash():
			c.SetVal(int64(1)) // held, and given back
		default:
			return fmt.Errorf("answeringRedis: unexpected command %v", args)
		}
		return nil
	}
}

// jitterRenewals holds each renewal a random time, up to max, or until its
// ctx ends.
func jitterRenewals(max time.Duration) renewalHook {
	return func(ctx context.Context) error {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Duration(rand.N(int64(max)))):
			return nil
		}
	}
}

// TestOneSlowRenewalOfAShortLease: Config.Timeout's doc promises that a
// renewal that times out "leaves time for another". With a short Lease (15
// to 19 ms: the Timeout its default, a quarter, or its most, just below a
// third) one renewal whose reply does not come within the Timeout, on a
// Redis that answers every other call at once, lost the permit: tick
// scheduled the retry max(every/4, 5ms) later, and that 5 ms floor put it
// past p.until, the end of the provable lease, so no retry was ever sent.
//
// The test ran on a real Redis and the real clock, and failed now and then
// under -race (1 run in 20, and a whole CI run): a timer late by a few
// milliseconds ends a 15 ms lease whatever the code does. It runs in a
// synctest bubble now, against a client hook that answers every script at
// once and holds the first renewal until its ctx ends: virtual time, so
// the times are exact, and the whole outcome is checked, not only logged.
func TestOneSlowRenewalOfAShortLease(t *testing.T) {
	for _, ctxTimeouts := range []bool{false, true} {
		for _, n := range []int{1, 2} {
			for _, tc := range []struct{ lease, timeout time.Duration }{
				{15 * time.Millisecond, 0},
				{18 * time.Millisecond, 5900 * time.Microsecond},
				{19 * time.Millisecond, 6 * time.Millisecond},
			} {
				t.Run(fmt.Sprintf("ctxTimeouts=%v/N=%d/lease=%v/timeout=%v", ctxTimeouts, n, tc.lease, tc.timeout), func(t *testing.T) {
					c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, ContextTimeoutEnabled: ctxTimeouts})
					t.Cleanup(func() { _ = c.Close() })
					var slow atomic.Int64 // renewals held until their ctx ended
					var held atomic.Pointer[Permit]
					var mu sync.Mutex
					var gaveUp, until time.Time // of the first renewal; guarded by mu
					h := &answeringRedis{hold: func(ctx context.Context) error {
						if slow.Add(1) > 1 {
							return nil
						}
						<-ctx.Done() // the first renewal: no reply within the Timeout
						p := held.Load()
						p.mu.Lock()
						u := p.until
						p.mu.Unlock()
						mu.Lock()
						gaveUp, until = time.Now(), u
						mu.Unlock()
						return ctx.Err()
					}}
					c.AddHook(h)
					synctest.Test(t, func(t *testing.T) {
						ctx := context.Background()
						s := mustNew(t, Config{Client: c, Name: "slowrenew", N: n, Lease: tc.lease, Timeout: tc.timeout})
						start := time.Now()
						p, err := s.Acquire(ctx)
						if err != nil {
							t.Fatal(err)
						}
						held.Store(p)
						time.Sleep(10 * tc.lease)
						mu.Lock()
						defer mu.Unlock()
						select {
						case <-p.Lost():
							p.mu.Lock()
							t.Errorf("lost %v after the provable lease's end, one renewal having timed out (Timeout %v, Lease %v) on a Redis answering at once",
								p.lostAt.Sub(until), s.timeout, s.lease)
							p.mu.Unlock()
						default:
						}
						if slow.Load() < 2 {
							t.Fatalf("%d renewals sent after the one that timed out; want a retry", slow.Load()-1)
						}
						if !gaveUp.Before(until) {
							t.Fatalf("the slow renewal gave up at %v, %v after the provable lease's end", gaveUp.Sub(start), gaveUp.Sub(until))
						}
						// Renewed every third of the Lease after the retry:
						// about 30 leases' worth, far more than 2.
						if got := h.renewals.Load(); got < 10 {
							t.Errorf("%d renewals answered in 10 Leases; want one every third of it", got)
						}
						if err := p.Release(ctx); err != nil {
							t.Error(err)
						}
					})
				})
			}
		}
	}
}

// TestShortLeaseHealthy: at the bounds (a 10 ms Lease; a Timeout just
// below a third of a 30 ms one) a Redis that answers every renewal within
// the Timeout keeps the permit for many leases. Covers the smallest Lease
// held over time (TestRenewalKeepsTheLease uses 60 ms), and a Timeout at its
// bound.
//
// It ran on a real Redis and the real clock, and lost a 10 ms lease five
// tries in five on a loaded machine (timers late by tens of milliseconds
// under -race); it runs on virtual time now, each renewal answered after a
// random time short of the Timeout.
func TestShortLeaseHealthy(t *testing.T) {
	for _, tc := range []struct {
		lease, timeout time.Duration
	}{{10 * time.Millisecond, 0}, {30 * time.Millisecond, 10*time.Millisecond - time.Nanosecond}} {
		for _, n := range []int{1, 2} {
			for _, ctxTimeouts := range []bool{false, true} {
				t.Run(fmt.Sprintf("N=%d/lease=%v/timeout=%v/ctxTimeouts=%v", n, tc.lease, tc.timeout, ctxTimeouts), func(t *testing.T) {
					c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, ContextTimeoutEnabled: ctxTimeouts})
					t.Cleanup(func() { _ = c.Close() })
					var timeout atomic.Int64 // the Semaphore's, once made
					h := &answeringRedis{hold: func(ctx context.Context) error {
						// Within 90% of the Timeout: a healthy Redis. A
						// renewal given up at Release ends at once.
						select {
						case <-time.After(time.Duration(rand.N(timeout.Load() * 9 / 10))):
							return nil
						case <-ctx.Done():
							return ctx.Err()
						}
					}}
					c.AddHook(h)
					synctest.Test(t, func(t *testing.T) {
						ctx := context.Background()
						s := mustNew(t, Config{Client: c, Name: "short", N: n, Lease: tc.lease, Timeout: tc.timeout})
						timeout.Store(int64(s.timeout))
						p, err := s.Acquire(ctx)
						if err != nil {
							t.Fatal(err)
						}
						time.Sleep(100 * tc.lease)
						select {
						case <-p.Lost():
							p.mu.Lock()
							t.Errorf("lost %v after the provable end, on a Redis answering within the Timeout", p.lostAt.Sub(p.until))
							p.mu.Unlock()
						default:
						}
						if got := h.renewals.Load(); got < 250 {
							t.Errorf("%d renewals in 100 Leases; want one every third of it, about 300", got)
						}
						if err := p.Release(ctx); err != nil {
							t.Error(err)
						}
					})
				})
			}
		}
	}
}

// TestPubSubKilledWaitersServed: the subscription's connection is killed
// (CLIENT KILL TYPE pubsub) while waiters of another process wait; the holder
// then releases, again and again. Every waiter must be served, by the
// resubscription's wake-up (well before the Poll, an hour here), nothing may
// hang, nor the subscription outlive the waiters.
func TestPubSubKilledWaitersServed(t *testing.T) {
	b := ownRedis(t)
	ctx := context.Background()
	for _, n := range []int{1, 2} {
		t.Run(fmt.Sprintf("N=%d", n), func(t *testing.T) {
			cfg := Config{Client: b.client(t), Name: fmt.Sprintf("kill%d", n), N: n, Lease: time.Minute, Poll: time.Hour}
			h := mustNew(t, cfg)
			cfg.Client = b.client(t)
			w := mustNew(t, cfg)
			admin := b.client(t)
			const waiters = 3
			held := acquireN(t, h, n)
			got := make(chan *Permit, waiters)
			for range waiters {
				go func() {
					// Three rounds of 20 s at most (below); a minute, a
					// lease's end, would serve a waiter never woken.
					actx, cancel := context.WithTimeout(ctx, 50*time.Second)
					defer cancel()
					q, err := w.Acquire(actx)
					if err != nil {
						t.Error(err)
					}
					got <- q
				}()
			}
			waitQueued(t, h, waiters)
			waitSubscribed(t, w)
			for i := range waiters {
				if err := admin.Do(ctx, "client", "kill", "type", "pubsub").Err(); err != nil {
					t.Fatal(err)
				}
				time.Sleep(20 * time.Millisecond)
				if err := held[0].Release(ctx); err != nil {
					t.Fatal(err)
				}
				held = held[1:]
				start := time.Now()
				q := <-got
				if q == nil {
					t.Fatalf("waiter %d: no permit", i)
				}
				// At once, by the resubscription's wake-up; a loaded
				// machine may take seconds to reconnect and ask, never
				// the minute of a lease or the hour of the Poll.
				if d := time.Since(start); d > 20*time.Second {
					t.Errorf("waiter %d served %v after the release (the subscription killed before it)", i, d)
				}
				held = append(held, q)
			}
			for _, p := range held {
				if err := p.Release(ctx); err != nil {
					t.Error(err)
				}
			}
			leftNothing(t, h, w)
		})
	}
}

// leftNothing fails the test if the Name of s[0] has a permit held or a
// waiter in line, or any of s a subscription or a waiter.
func leftNothing(t *testing.T, s ...*Semaphore) {
	t.Helper()
	if held, queued := counts(t, s[0]); held != 0 || queued != 0 {
		t.Errorf("after the run: %d held, %d queued", held, queued)
	}
	for _, s := range s {
		s.mu.Lock()
		sub, left := s.hub != nil, len(s.waiters)
		s.mu.Unlock()
		if sub || left != 0 {
			t.Errorf("after the run: subscription %v, %d waiters", sub, left)
		}
	}
}

// TestSubscriptionChurn: waiters of one Semaphore come and go (their ctx
// ends at random) while a holder of another process takes and releases,
// handing permits by message, and the subscription is killed now and then.
// Nothing may be left in Redis, no holders overlap beyond N, and the
// subscription ends with the last waiter.
func TestSubscriptionChurn(t *testing.T) {
	b := ownRedis(t)
	ctx := context.Background()
	for _, n := range []int{1, 2} {
		t.Run(fmt.Sprintf("N=%d", n), func(t *testing.T) {
			cfg := Config{Client: b.client(t), Name: fmt.Sprintf("churn%d", n), N: n, Lease: time.Second, Poll: 50 * time.Millisecond}
			h := mustNew(t, cfg)
			cfg.Client = b.client(t)
			w := mustNew(t, cfg)
			admin := b.client(t)
			var inside atomic.Int32
			var over atomic.Int32
			use := func(p *Permit) {
				if inside.Add(1) > int32(n) {
					over.Add(1)
				}
				time.Sleep(time.Duration(rand.N(500)) * time.Microsecond)
				inside.Add(-1)
				if err := p.Release(ctx); err != nil {
					t.Errorf("Release: %v", err)
				}
			}
			stop := time.Now().Add(time.Second)
			var wg sync.WaitGroup
			var served atomic.Int32
			for i := range 6 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					s := w
					if i == 0 {
						s = h
					}
					for time.Now().Before(stop) {
						actx, cancel := context.WithTimeout(ctx, time.Duration(1+rand.N(20))*time.Millisecond)
						p, err := s.Acquire(actx)
						cancel()
						if err != nil {
							if !errors.Is(err, context.DeadlineExceeded) {
								t.Errorf("Acquire: %v", err)
							}
							continue
						}
						served.Add(1)
						use(p)
					}
				}()
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				for time.Now().Before(stop) {
					time.Sleep(time.Duration(50+rand.N(100)) * time.Millisecond)
					_ = admin.Do(ctx, "client", "kill", "type", "pubsub").Err()
				}
			}()
			wg.Wait()
			if over.Load() > 0 {
				t.Errorf("more than %d holders at once, %d times", n, over.Load())
			}
			t.Logf("%d permits served", served.Load())
			deadline := time.Now().Add(time.Second)
			for {
				held, queued := counts(t, h)
				if held == 0 && queued == 0 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("after the run: %d held, %d queued", held, queued)
				}
				time.Sleep(5 * time.Millisecond)
			}
			leftNothing(t, h, w)
		})
	}
}

// TestPausedServerNoOverlap: Redis is stopped (SIGSTOP) for longer than a
// lease while one process holds the permits and another keeps asking; once
// Redis is back, the other is granted them. By then no holder of the first
// may still prove its lease (Permit.until: what Lost is closed at), its
// Release must say ErrLost, and the other's tokens must be higher. Covers
// the order of the end of the holder's trust and the other's grant across
// a pause (TestRedisStopped checks Lost within 10 s, and the grant after the
// resume, not their order).
//
// The times are ten times those the test had (a 150 ms Lease, a 30 ms
// Timeout), and it reads until rather than the moment Lost closed: on a
// loaded machine, renewals late by a Timeout lost the lease before the
// pause, and a Lost timer that ran late came after the other's grant.
func TestPausedServerNoOverlap(t *testing.T) {
	for _, ctxTimeouts := range []bool{false, true} {
		for _, n := range []int{1, 2} {
			t.Run(fmt.Sprintf("ctxTimeouts=%v/N=%d", ctxTimeouts, n), func(t *testing.T) {
				t.Parallel() // each on a Redis of its own, asleep for most of its time
				b := ownRedis(t)
				newClient := func() *redis.Client {
					c := redis.NewClient(&redis.Options{Addr: b.addr, DialTimeout: time.Second,
						ReadTimeout: 2 * time.Second, WriteTimeout: 2 * time.Second, MaxRetries: -1,
						ContextTimeoutEnabled: ctxTimeouts})
					t.Cleanup(func() { _ = c.Close() })
					return c
				}
				const lease = 1500 * time.Millisecond
				cfg := Config{Client: newClient(), Name: "pause", N: n, Lease: lease,
					Timeout: 300 * time.Millisecond, Poll: 200 * time.Millisecond}
				a := mustNew(t, cfg)
				cfg.Client = newClient()
				other := mustNew(t, cfg)
				ctx := context.Background()
				var mine []*Permit
				for range n {
					p, err := a.Acquire(ctx)
					if err != nil {
						t.Fatal(err)
					}
					mine = append(mine, p)
				}
				type res struct {
					p   *Permit
					got time.Time // when its Acquire returned: after the grant
				}
				got := make(chan res, n)
				const within = 20 * time.Second
				for range n {
					go func() {
						deadline := time.Now().Add(within)
						for time.Now().Before(deadline) {
							actx, cancel := context.WithDeadline(ctx, deadline)
							q, err := other.Acquire(actx)
							cancel()
							if err == nil {
								got <- res{q, time.Now()}
								return
							}
							time.Sleep(time.Millisecond)
						}
						got <- res{}
					}()
				}
				waitQueued(t, a, int64(n))
				b.proc.pause()
				time.Sleep(2 * lease)
				b.proc.resume()
				for range n {
					r := <-got
					if r.p == nil {
						t.Fatalf("the other process got no permit within %v", within)
					}
					for i, p := range mine {
						p.mu.Lock()
						until := p.until
						p.mu.Unlock()
						if until.After(r.got) {
							t.Errorf("holder %d could still prove its lease %v after the other's grant (token %d)", i, until.Sub(r.got), r.p.Token())
						}
						if r.p.Token() <= p.Token() {
							t.Errorf("token %d after %d", r.p.Token(), p.Token())
						}
					}
					defer r.p.Release(ctx)
				}
				for i, p := range mine {
					if err := p.Release(ctx); !errors.Is(err, ErrLost) {
						t.Errorf("holder %d: Release after the pause: %v, want ErrLost", i, err)
					}
				}
			})
		}
	}
}

// TestReleaseErrorsRedisStopped: with Redis stopped, Release returns
// exactly what its doc says: ctx.Err() when ctx was cancelled (not only at
// a deadline) during the round trip, context.DeadlineExceeded when ctx's
// deadline comes before the Timeout, and an error matching ErrUnavailable
// when the Timeout comes first; within the Timeout in every case; and never
// closes Lost. Covers the cancellation (TestRedisStopped covers the Timeout,
// TestCtxDeadlineBeforeTimeoutGivesCtxErr the deadline on a slow network).
//
// The times are loose, as a loaded machine needs: under the race detector
// one overran a bound of 50 ms past a Timeout of 100 ms, and a bound of a
// second past a Timeout of a second was no surer. The Timeout is a second,
// far from the cancellation at 10 ms and the deadline at 20 ms, and a
// Release may take 20 s more, which a loaded machine meets (a client that
// honours deadlines sees a cancellation only at the Timeout, as the
// package's doc says); what that catches is a Release that waits for the
// client instead, whose ReadTimeout is a minute.
func TestReleaseErrorsRedisStopped(t *testing.T) {
	b := ownRedis(t)
	for _, ctxTimeouts := range []bool{false, true} {
		t.Run(fmt.Sprintf("ctxTimeouts=%v", ctxTimeouts), func(t *testing.T) {
			c := redis.NewClient(&redis.Options{Addr: b.addr, DialTimeout: time.Second,
				ReadTimeout: time.Minute, WriteTimeout: time.Minute, MaxRetries: -1,
				ContextTimeoutEnabled: ctxTimeouts})
			t.Cleanup(func() { _ = c.Close() })
			const timeout = time.Second
			s := mustNew(t, Config{Client: c, Name: fmt.Sprintf("relerr%v", ctxTimeouts), N: 2, Lease: time.Minute, Timeout: timeout})
			ctx := context.Background()
			var ps []*Permit
			for range 2 {
				p, err := s.Acquire(ctx)
				if err != nil {
					t.Fatal(err)
				}
				ps = append(ps, p)
			}
			// The release script loaded (Redis stopped cannot load it).
			if held, err := s.release(ctx, "nobody"); held || err != nil {
				t.Fatal(held, err)
			}
			b.proc.pause()
			defer b.proc.resume()

			cctx, cancel := context.WithCancel(ctx)
			time.AfterFunc(10*time.Millisecond, cancel)
			start := time.Now()
			err := ps[0].Release(cctx)
			if !errors.Is(err, context.Canceled) || errors.Is(err, ErrUnavailable) {
				t.Errorf("Release, its ctx cancelled: %v; want context.Canceled", err)
			}
			if d := time.Since(start); d > timeout+20*time.Second {
				t.Errorf("Release, its ctx cancelled, took %v", d)
			}
			dctx, cancel2 := context.WithTimeout(ctx, 20*time.Millisecond)
			defer cancel2()
			if err := ps[1].Release(dctx); !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrUnavailable) {
				t.Errorf("Release past its ctx's deadline: %v; want context.DeadlineExceeded", err)
			}
			for i, p := range ps {
				select {
				case <-p.Lost():
					t.Errorf("permit %d: Lost closed after Release", i)
				default:
				}
			}
		})
	}
}

// TestReleaseRacesRenewal: Release comes at random moments of a renewal
// under way (slow, but within the Timeout), with Context asked for
// concurrently: Release succeeds, Lost never closes, the Context ends with
// context.Canceled, and nothing is left in Redis.
//
// It runs in a synctest bubble, on a real Redis: the holder's timers, the
// renewals' jitter and every Timeout are on the bubble's clock, which stands
// still while a round trip is on the network, so a loaded machine changes
// none of the moments. (On the real clock, with a 75 ms lease, a renewal a
// busy machine made late lost the lease, and Release said so.) The times
// are those of that test, a hundred times longer: the lease in Redis, on
// the real clock, then never ends during a round.
func TestReleaseRacesRenewal(t *testing.T) {
	b := ownRedis(t)
	const x = 100 // the scale of the times
	for _, ctxTimeouts := range []bool{false, true} {
		for _, n := range []int{1, 2} {
			t.Run(fmt.Sprintf("ctxTimeouts=%v/N=%d", ctxTimeouts, n), func(t *testing.T) {
				c := redis.NewClient(&redis.Options{Addr: b.addr, DialTimeout: time.Second,
					ReadTimeout: time.Second, WriteTimeout: time.Second, MaxRetries: -1,
					ContextTimeoutEnabled: ctxTimeouts})
				t.Cleanup(func() { _ = c.Close() })
				c.AddHook(jitterRenewals(x * 12 * time.Millisecond))
				var s *Semaphore
				synctest.Test(t, func(t *testing.T) {
					ctx := context.Background()
					s = mustNew(t, Config{Client: c, Name: fmt.Sprintf("racerenew%v%d", ctxTimeouts, n), N: n,
						Lease: x * 75 * time.Millisecond, Timeout: x * 24 * time.Millisecond})
					for i := range 15 {
						p, err := s.Acquire(ctx)
						if err != nil {
							t.Fatal(err)
						}
						time.Sleep(x * (25*time.Millisecond + time.Duration(rand.N(int64(12*time.Millisecond))))) // the renewal at 25 ms
						var wg sync.WaitGroup
						for range 4 {
							wg.Add(1)
							go func() { defer wg.Done(); _ = p.Context() }()
						}
						err = p.Release(ctx)
						wg.Wait()
						if err != nil {
							t.Fatalf("round %d: Release: %v", i, err)
						}
						time.Sleep(x * time.Millisecond)
						select {
						case <-p.Lost():
							t.Fatalf("round %d: Lost closed after a successful Release", i)
						default:
						}
						if c := context.Cause(p.Context()); c != context.Canceled {
							t.Fatalf("round %d: cause %v", i, c)
						}
					}
					time.Sleep(x * 10 * time.Millisecond) // renewals given up land
				})
				if held, queued := counts(t, s); held != 0 || queued != 0 {
					t.Errorf("after the run: %d held, %d queued", held, queued)
				}
			})
		}
	}
}

// TestLeaveBlockedBySubscriptionConnecting: the subscription connects
// (here its first dial, held until Redis is stopped; as well a reconnection
// after a dropped connection) to a Redis that then stalls (SIGSTOP: the
// kernel still accepts the connection, the HELLO is not answered). The
// waiter's ctx ends meanwhile: Acquire should return ctx.Err() within about
// a Timeout (its give-back is bounded by it). But its deferred leave ends the
// subscription with ps.Close(), which waits for go-redis's PubSub lock, held
// by the Subscribe in listen for the whole handshake: until the client's
// ReadTimeout (a minute here; 3 s by go-redis's default), whatever the ctx
// and Timeout. The package doc promises a Redis that fails to answer gives
// an error, "never a hang".
//
// Nothing waits on a timer being on time: the ctx is cancelled once the
// handshake is under way (the subscription's connection read from), the
// Timeout (a second) is one a loaded machine meets for the waiter's first
// attempt, and the ReadTimeout is so much longer that a wait of 20 s tells
// a leave that waited for it from one that did not.
func TestLeaveBlockedBySubscriptionConnecting(t *testing.T) {
	b := ownRedis(t)
	ctx := context.Background()
	var dials atomic.Int32
	entered, gate, handshaking := make(chan struct{}), make(chan struct{}), make(chan struct{})
	c := redis.NewClient(&redis.Options{Addr: b.addr, DialTimeout: time.Second,
		ReadTimeout: time.Minute, WriteTimeout: time.Second, MaxRetries: -1,
		Dialer: func(ctx context.Context, network, addr string) (net.Conn, error) {
			if dials.Add(1) != 2 { // the pool's first connection, then the subscription's
				return (&net.Dialer{}).DialContext(ctx, network, addr)
			}
			close(entered)
			select {
			case <-gate:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			conn, err := (&net.Dialer{}).DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return &readSignal{Conn: conn, read: handshaking}, nil
		}})
	t.Cleanup(func() { _ = c.Close() })
	cfg := Config{Client: b.roomyClient(t), Name: "leaveblocked", N: 1, Lease: time.Minute,
		Timeout: time.Second, Poll: time.Hour}
	// The holder's Timeout is generous: its Release, as Redis resumes, is
	// not what the test measures, and 30 ms failed it on a loaded machine.
	hcfg := cfg
	hcfg.Timeout = 10 * time.Second
	h := mustNew(t, hcfg)
	p, err := h.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Client = c
	w := mustNew(t, cfg)
	type res struct {
		err error
		at  time.Time
	}
	got := make(chan res, 1)
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		q, err := w.Acquire(wctx)
		if q != nil {
			t.Error("a permit")
		}
		got <- res{err, time.Now()}
	}()
	select {
	case <-entered:
	case r := <-got:
		t.Fatalf("Acquire = %v before the subscription dialled", r.err)
	}
	b.proc.pause()
	resumed := false
	defer func() {
		if !resumed {
			b.proc.resume()
		}
	}()
	close(gate)
	<-handshaking // the HELLO is sent, and its answer awaited under the PubSub's lock
	cancel()
	ended := time.Now()
	const within = 20 * time.Second
	var r res
	select {
	case r = <-got:
	case <-time.After(within):
		t.Errorf("Acquire has not returned %v after its ctx ended (Timeout %v): its leave waits for the subscription's handshake with a stalled Redis", within, cfg.Timeout)
		b.proc.resume()
		r = <-got
	}
	b.proc.resume()
	resumed = true
	if !errors.Is(r.err, context.Canceled) {
		t.Errorf("Acquire: %v, want context.Canceled", r.err)
	}
	t.Logf("Acquire returned %v after its ctx ended (Timeout %v)", r.at.Sub(ended), cfg.Timeout)
	if err := p.Release(ctx); err != nil {
		t.Error(err)
	}
}

// readSignal is a connection that closes read at its first Read.
type readSignal struct {
	net.Conn
	once sync.Once
	read chan struct{}
}

func (c *readSignal) Read(b []byte) (int, error) {
	c.once.Do(func() { close(c.read) })
	return c.Conn.Read(b)
}
