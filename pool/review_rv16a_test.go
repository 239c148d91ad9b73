package pool_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync/breaker"
	"github.com/ctxsync/ctxsync/internal/testutil"
	"github.com/ctxsync/ctxsync/pool"
)

// TestRV16aBreakerPanicDuringNewsPanic: New panics (or calls
// runtime.Goexit), and as the Breaker counts that failure, its OnCall
// panics (or calls runtime.Goexit) in turn, replacing New's. The Acquire
// fails as the last of them says, and names the function that raised it:
// the Breaker's Settings, not New. On main the error said "Config.New
// panicked: oncall", naming New for OnCall's value, and a Goexit of OnCall
// over New's panic was told as New's.
func TestRV16aBreakerPanicDuringNewsPanic(t *testing.T) {
	for _, c := range []struct {
		name             string
		newExit, onExit  bool
		panicked, failed string // the Acquire's panic's first line, or its error
	}{
		{name: "panic over panic", panicked: "pool: a function of Config.Breaker's Settings panicked: oncall"},
		{name: "panic over Goexit", newExit: true, panicked: "pool: a function of Config.Breaker's Settings panicked: oncall"},
		{name: "Goexit over panic", onExit: true, failed: "pool: a function of Config.Breaker's Settings did not return (runtime.Goexit)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var mu sync.Mutex
				var created []pool.CreateEvent
				b := breaker.New(breaker.Settings{OnCall: func(e breaker.CallEvent) {
					if e.Outcome == breaker.Failure {
						if c.onExit {
							runtime.Goexit()
						}
						panic("oncall")
					}
				}})
				p, err := pool.New(pool.Config[int]{MaxSize: 1, Breaker: b,
					New: func(context.Context) (int, error) {
						if c.newExit {
							runtime.Goexit()
						}
						panic("new")
					},
					Hooks: pool.Hooks{OnCreate: func(e pool.CreateEvent) {
						mu.Lock()
						created = append(created, e)
						mu.Unlock()
					}},
				})
				require.NoError(t, err)
				pv, aerr := edge16Acquire(p)
				synctest.Wait()
				if c.panicked != "" {
					perr, ok := pv.(error)
					require.True(t, ok, "Acquire panicked with %#v, err %v", pv, aerr)
					first, _, _ := strings.Cut(perr.Error(), "\n")
					require.Equal(t, c.panicked, first)
					require.Contains(t, perr.Error(), "TestRV16aBreakerPanicDuringNewsPanic", "the stack shows the panic")
				} else {
					require.Nil(t, pv)
					require.EqualError(t, aerr, c.failed)
				}
				mu.Lock()
				require.Len(t, created, 1)
				require.EqualError(t, created[0].Err, "pool: a function of Config.Breaker's Settings panicked or did not return")
				mu.Unlock()
				s := p.Stats()
				require.Equal(t, 0, s.Total)
				require.Equal(t, int64(1), s.CreateFailures)
				require.NoError(t, p.Close(context.Background()))
			})
		})
	}
}

// TestRV16aNewPanicThroughBreaker: New's own panic, through a Breaker
// whose functions do not panic, is raised by the Acquire with New's value,
// which errors.Unwrap gives, and New's stack.
func TestRV16aNewPanicThroughBreaker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		boom := errors.New("boom")
		p, err := pool.New(pool.Config[int]{MaxSize: 1, Breaker: breaker.New(breaker.Settings{OnCall: func(breaker.CallEvent) {}}),
			New: func(context.Context) (int, error) { panic(boom) }})
		require.NoError(t, err)
		pv, _ := edge16Acquire(p)
		synctest.Wait()
		perr, ok := pv.(error)
		require.True(t, ok, "Acquire panicked with %#v", pv)
		require.True(t, strings.HasPrefix(perr.Error(), "pool: Config.New panicked: boom\n"), "%q", perr.Error())
		require.Contains(t, perr.Error(), "TestRV16aNewPanicThroughBreaker")
		require.Same(t, boom, errors.Unwrap(perr))
		require.Equal(t, int64(1), p.Stats().CreateFailures)
		require.NoError(t, p.Close(context.Background()))
	})
}

// TestRV16aCloseGoexitsAfterBreakerPanic: the Breaker's OnCall panics after
// New made a value, and Config.Close, closing that value, calls
// runtime.Goexit, which no one can stop: the OnCall panic is lost. The
// Acquire fails with an error that names Config.Close, whose Goexit it was,
// not the Breaker's Settings; the value is closed once, and counted in
// Stats.CloseErrors. A Close that panics with nil there is counted and
// dropped like any other panic of it. On main the error said that a function
// of the Breaker's Settings did not return.
func TestRV16aCloseGoexitsAfterBreakerPanic(t *testing.T) {
	for _, goexit := range []bool{true, false} {
		name := "panic(nil)"
		if goexit {
			name = "Goexit"
		}
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var mu sync.Mutex
				news, closes := 0, 0
				b := breaker.New(breaker.Settings{OnCall: func(e breaker.CallEvent) {
					if e.Outcome == breaker.Success {
						panic("oncall")
					}
				}})
				p, err := pool.New(pool.Config[int]{MaxSize: 1, Breaker: b,
					New: func(context.Context) (int, error) {
						mu.Lock()
						news++
						mu.Unlock()
						return news, nil
					},
					Close: func(int) error {
						mu.Lock()
						closes++
						mu.Unlock()
						if goexit {
							runtime.Goexit()
						}
						panic(nil)
					},
				})
				require.NoError(t, err)
				pv, aerr := edge16Acquire(p)
				synctest.Wait()
				if goexit {
					require.Nil(t, pv)
					require.EqualError(t, aerr, "pool: Config.Close did not return (runtime.Goexit)")
				} else {
					perr, ok := pv.(error)
					require.True(t, ok, "Acquire panicked with %#v, err %v", pv, aerr)
					first, _, _ := strings.Cut(perr.Error(), "\n")
					require.Equal(t, "pool: a function of Config.Breaker's Settings panicked: oncall", first)
				}
				s := p.Stats()
				require.Equal(t, 0, s.Total)
				require.Equal(t, int64(1), s.CloseErrors)
				require.Equal(t, int64(1), s.CreateFailures)
				require.Zero(t, s.Created)
				mu.Lock()
				require.Equal(t, 1, news)
				require.Equal(t, news, closes, "every value New made is closed once")
				mu.Unlock()
				require.NoError(t, p.Close(context.Background()))
			})
		})
	}
}

// TestRV16aBackgroundPanicThroughBreaker: a panic of New in the pool's own
// goroutine, through the Breaker, with no caller waiting, ends the program
// with New's own value, as without a Breaker: nothing of the pool's wraps
// it. The test runs itself in a child process to see it.
func TestRV16aBackgroundPanicThroughBreaker(t *testing.T) {
	if os.Getenv("POOL_TEST_RV16A_BACKGROUND") == "1" {
		synctest.Test(t, func(t *testing.T) {
			p, err := pool.New(pool.Config[int]{MaxSize: 1, MinIdle: 1, Breaker: breaker.New(breaker.Settings{}),
				New: func(context.Context) (int, error) { panic("refill exploded") }})
			require.NoError(t, err)
			time.Sleep(time.Hour)
			_ = p.Close(t.Context())
		})
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestRV16aBackgroundPanicThroughBreaker$", "-test.count=1")
	cmd.Env = append(os.Environ(), "POOL_TEST_RV16A_BACKGROUND=1")
	out, err := cmd.CombinedOutput()
	require.Error(t, err, "the program went on: %s", out)
	require.Contains(t, string(out), "panic: refill exploded")
	require.NotContains(t, string(out), "newPanicking")
}

// TestRV16aHammerNewAndBreakerGoexit: Acquires with random deadlines on a
// pool whose New fails, or calls runtime.Goexit, now and then, and whose
// breaker's OnCall calls runtime.Goexit now and then, on New's successes,
// failures and Goexits alike. Every Acquire gets a resource or an error it
// may get: its ctx's, New's, the breaker's refusal, or the Goexit error
// naming New or the Breaker's Settings; every value New made is closed once
// by the time the pool is closed; and the pool never holds more than
// MaxSize. (Goexits, not panics: a panic in a call to New that no Acquire
// waits for any more ends the program, as Pool says.)
func TestRV16aHammerNewAndBreakerGoexit(t *testing.T) {
	var named [2]atomic.Int64 // Goexit errors naming New, the Breaker's Settings
	defer func() {
		require.Positive(t, named[0].Load(), "no Goexit of New reached an Acquire: the test tests nothing")
		require.Positive(t, named[1].Load(), "no Goexit of OnCall reached an Acquire: the test tests nothing")
	}()
	for seed := range uint64(testutil.HammerRounds(10)) {
		synctest.Test(t, func(t *testing.T) {
			rnd := testutil.LockedRand(seed, 16)
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
					switch rnd(6) {
					case 0:
						return 0, errors.New("down")
					case 1:
						runtime.Goexit()
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
			require.NoError(t, err)
			var wg sync.WaitGroup
			for range 6 {
				wg.Go(func() {
					for range 15 {
						func() {
							ctx, cancel := context.WithTimeout(context.Background(), time.Duration(rnd(int64(3*time.Millisecond))))
							defer cancel()
							r, err := p.Acquire(ctx)
							if err != nil {
								switch msg := err.Error(); {
								case errors.Is(err, context.DeadlineExceeded), errors.Is(err, breaker.ErrOpen), msg == "down":
								case msg == "pool: Config.New did not return (runtime.Goexit)":
									named[0].Add(1)
								case msg == "pool: a function of Config.Breaker's Settings did not return (runtime.Goexit)":
									named[1].Add(1)
								default:
									t.Errorf("Acquire: %v", err)
								}
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
			require.NoError(t, p.Close(context.Background()))
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
