package pool_test

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ctxsync/ctxsync/breaker"
	"github.com/ctxsync/ctxsync/internal/testutil"
	"github.com/ctxsync/ctxsync/pool"
)

// TestSeams15_BreakerCodePanicsAfterNewMadeAResource: the breaker that
// guards New runs code of the user's after New has returned a resource
// (OnCall, IsFailure, OnStateChange as a trial closes it). If that code
// panics, the panic goes to the Acquire as New's would; the resource New made
// is not lost unclosed: every value New returned is given to Config.Close by
// the time the pool is closed.
func TestSeams15_BreakerCodePanicsAfterNewMadeAResource(t *testing.T) {
	for _, tc := range []struct {
		name     string
		settings func() breaker.Settings
		trial    bool
		goexit   bool // the breaker's code calls runtime.Goexit: Acquire fails
	}{
		{"OnCall", func() breaker.Settings {
			return breaker.Settings{OnCall: func(e breaker.CallEvent) {
				if e.Outcome == breaker.Success {
					panic("OnCall")
				}
			}}
		}, false, false},
		{"IsFailure", func() breaker.Settings {
			return breaker.Settings{FailureThreshold: 1, OpenTimeout: time.Second,
				IsFailure: func(err error) bool {
					if err == nil {
						panic("IsFailure")
					}
					return true
				}}
		}, true, false},
		{"OnStateChange", func() breaker.Settings {
			return breaker.Settings{FailureThreshold: 1, OpenTimeout: time.Second,
				OnStateChange: func(from, to breaker.State, _ breaker.Counts) {
					if to == breaker.Closed {
						panic("OnStateChange")
					}
				}}
		}, true, false},
		{"OnCallGoexit", func() breaker.Settings {
			return breaker.Settings{OnCall: func(e breaker.CallEvent) {
				if e.Outcome == breaker.Success {
					runtime.Goexit()
				}
			}}
		}, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b := breaker.New(tc.settings())
				if tc.trial {
					_ = b.Execute(context.Background(), func(context.Context) error { return errors.New("down") })
					time.Sleep(time.Second) // half-open: New is the trial
				}
				var made, closed atomic.Int64
				p, err := pool.New(pool.Config[int]{
					MaxSize: 1,
					Breaker: b,
					New: func(context.Context) (int, error) {
						return int(made.Add(1)), nil
					},
					Close: func(int) error {
						closed.Add(1)
						return nil
					},
				})
				if err != nil {
					t.Fatal(err)
				}
				func() {
					defer func() {
						if p := recover(); (p == nil) != tc.goexit {
							t.Errorf("Acquire raised %v", p)
						}
					}()
					r, err := p.Acquire(context.Background())
					if err == nil {
						r.Release()
						t.Error("Acquire got a resource")
					}
				}()
				if err := p.Close(context.Background()); err != nil {
					t.Fatal(err)
				}
				synctest.Wait()
				if m, c := made.Load(), closed.Load(); m != c {
					t.Errorf("New made %d resources, Close closed %d: a resource was lost unclosed", m, c)
				}
				if s := p.Stats(); s.Idle != 0 || s.InUse != 0 {
					t.Errorf("stats after Close: %+v", s)
				}
			})
		})
	}
}

// TestSeams15_BreakerPanicThenClosePanics: the breaker's OnCall panics after
// New made a resource, and Config.Close panics as it closes it: the
// Acquire gets a panic, the pool keeps no place for the call, and Close
// returns.
func TestSeams15_BreakerPanicThenClosePanics(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := breaker.New(breaker.Settings{OnCall: func(e breaker.CallEvent) {
			if e.Outcome == breaker.Success {
				panic("OnCall")
			}
		}})
		var closes atomic.Int64
		p, err := pool.New(pool.Config[int]{
			MaxSize: 1,
			Breaker: b,
			New:     func(context.Context) (int, error) { return 1, nil },
			Close: func(int) error {
				closes.Add(1)
				panic("Close")
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		func() {
			defer func() {
				if recover() == nil {
					t.Error("Acquire did not panic")
				}
			}()
			_, _ = p.Acquire(context.Background())
		}()
		synctest.Wait()
		if n := closes.Load(); n != 1 {
			t.Errorf("Config.Close called %d times, want 1", n)
		}
		if s := p.Stats(); s.Total != 0 || s.CloseErrors != 1 || s.CreateFailures != 1 {
			t.Errorf("stats after the failed make: %+v", s)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := p.Close(ctx); err != nil {
			t.Fatalf("Close = %v", err)
		}
	})
}

// TestSeams15_HammerBreakerCodeGoexits: Acquires with random deadlines on a
// pool whose breaker's OnCall calls runtime.Goexit now and then, on
// successes and failures of New alike, while New fails now and then: every
// value New made is closed once by the time the pool is closed, and the pool
// never holds more than MaxSize. (Goexit, not a panic: a panic in a call to
// New that no Acquire waits for any more ends the program, as Pool says.)
func TestSeams15_HammerBreakerCodeGoexits(t *testing.T) {
	for seed := range uint64(20) {
		synctest.Test(t, func(t *testing.T) {
			rnd := testutil.LockedRand(seed, 15)
			var made, closed, live, peak atomic.Int64
			b := breaker.New(breaker.Settings{
				FailureThreshold: 3,
				OpenTimeout:      5 * time.Millisecond,
				OnCall: func(e breaker.CallEvent) {
					if e.Outcome != breaker.Rejected && rnd(4) == 0 {
						runtime.Goexit()
					}
				},
			})
			const maxSize = 3
			p, err := pool.New(pool.Config[int64]{
				MaxSize: maxSize,
				Breaker: b,
				New: func(context.Context) (int64, error) {
					time.Sleep(time.Duration(rnd(int64(time.Millisecond))))
					if rnd(5) == 0 {
						return 0, errors.New("down")
					}
					n := live.Add(1)
					for {
						pk := peak.Load()
						if n <= pk || peak.CompareAndSwap(pk, n) {
							break
						}
					}
					return made.Add(1), nil
				},
				Close: func(int64) error {
					live.Add(-1)
					closed.Add(1)
					return nil
				},
			})
			if err != nil {
				t.Fatal(err)
			}
			var wg sync.WaitGroup
			for range 6 {
				wg.Go(func() {
					for range 15 {
						func() {
							ctx, cancel := context.WithTimeout(context.Background(), time.Duration(rnd(int64(3*time.Millisecond))))
							defer cancel()
							r, err := p.Acquire(ctx)
							if err != nil {
								return
							}
							time.Sleep(time.Duration(rnd(int64(time.Millisecond))))
							if rnd(3) == 0 {
								r.Destroy()
							} else {
								r.Release()
							}
						}()
					}
				})
			}
			wg.Wait()
			if err := p.Close(context.Background()); err != nil {
				t.Fatal(err)
			}
			synctest.Wait()
			if m, c := made.Load(), closed.Load(); m != c {
				t.Errorf("New made %d values, Close closed %d", m, c)
			}
			if pk := peak.Load(); pk > maxSize {
				t.Errorf("%d values alive at once, MaxSize %d", pk, maxSize)
			}
		})
	}
}

// TestSeams15_NewLooksAtTheBreakerWithoutUsingIt: pool.New checks that
// Config.Breaker was made by breaker.New without a call through it: nothing
// is counted and OnCall is told nothing.
func TestSeams15_NewLooksAtTheBreakerWithoutUsingIt(t *testing.T) {
	var told atomic.Int64
	b := breaker.New(breaker.Settings{OnCall: func(breaker.CallEvent) { told.Add(1) }})
	p, err := pool.New(pool.Config[int]{MaxSize: 1, Breaker: b, New: func(context.Context) (int, error) { return 1, nil }})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = p.Close(context.Background()) }()
	if c := b.Counts(); c != (breaker.Counts{}) || told.Load() != 0 {
		t.Fatalf("after pool.New: counts %+v, OnCall told %d times; want nothing", c, told.Load())
	}
}
