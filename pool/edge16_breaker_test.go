package pool_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync/breaker"
	"github.com/ctxsync/ctxsync/pool"
)

// edge16Acquire runs one Acquire of p, and returns what it panicked with (or
// "goexit" if it ended its goroutine), its error otherwise.
func edge16Acquire(p *pool.Pool[int]) (panicked any, err error) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		finished := false
		defer func() {
			if r := recover(); r != nil {
				panicked = r
			} else if !finished {
				panicked = "goexit"
			}
		}()
		var r *pool.Resource[int]
		r, err = p.Acquire(context.Background())
		if err == nil {
			r.Release()
			err = errors.New("got a resource")
		}
		finished = true
	}()
	<-done
	return panicked, err
}

// TestEdge16BreakerPanicThenClosePanic: the breaker guarding New panics
// ("OnCall") after New made a value, and Config.Close panics too as the pool
// closes that value. The Acquire gets the first panic, the one of the
// breaker's function: Close's, which came second, is counted in
// Stats.CloseErrors and dropped. On main, Close's panic replaced OnCall's.
// The same when the breaker's function calls runtime.Goexit: the Acquire
// fails with the Goexit's error, and Close's panic is dropped.
func TestEdge16BreakerPanicThenClosePanic(t *testing.T) {
	for _, goexit := range []bool{false, true} {
		t.Run(fmt.Sprint("goexit=", goexit), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b := breaker.New(breaker.Settings{OnCall: func(e breaker.CallEvent) {
					if e.Outcome == breaker.Success {
						if goexit {
							runtime.Goexit()
						}
						panic("OnCall")
					}
				}})
				var created []pool.CreateEvent
				var mu sync.Mutex
				p, err := pool.New(pool.Config[int]{
					MaxSize: 1,
					Breaker: b,
					New:     func(context.Context) (int, error) { return 1, nil },
					Close:   func(int) error { panic("Close") },
					Hooks: pool.Hooks{OnCreate: func(e pool.CreateEvent) {
						mu.Lock()
						created = append(created, e)
						mu.Unlock()
					}},
				})
				require.NoError(t, err)
				pv, aerr := edge16Acquire(p)
				synctest.Wait()
				if goexit {
					require.Nil(t, pv)
					require.Error(t, aerr)
					require.Contains(t, aerr.Error(), "Config.Breaker")
					require.NotContains(t, aerr.Error(), "Config.New")
				} else {
					require.NotNil(t, pv, "Acquire did not panic")
					perr, ok := pv.(error)
					require.True(t, ok, "Acquire panicked with %#v", pv)
					msg := perr.Error()
					require.True(t, strings.HasPrefix(msg, "pool: a function of Config.Breaker's Settings panicked: OnCall\n"), "Acquire panicked with %q", msg)
					first, _, _ := strings.Cut(msg, "\n")
					require.NotContains(t, first, "Close")
				}
				s := p.Stats()
				require.Equal(t, 0, s.Total)
				require.Equal(t, int64(1), s.CloseErrors)
				require.Equal(t, int64(1), s.CreateFailures)
				mu.Lock()
				require.Len(t, created, 1)
				require.Error(t, created[0].Err)
				require.Contains(t, created[0].Err.Error(), "Config.Breaker")
				mu.Unlock()
				require.NoError(t, p.Close(context.Background()))
			})
		})
	}
}

// TestEdge16PanicNamesItsFunction: the panic Acquire raises for the call to
// New made for it names the function that panicked: Config.New itself, or a
// function of Config.Breaker's Settings (OnCall, IsFailure, OnStateChange),
// before New was called or after it returned. On main every one said
// "pool: Config.New panicked". Hooks.OnCreate is told the same.
func TestEdge16PanicNamesItsFunction(t *testing.T) {
	for _, c := range []struct {
		name    string
		newPan  bool // New panics
		newErr  bool // New fails
		onCall  func(breaker.CallEvent)
		isFail  func(error) bool
		want    string
		created string
	}{
		{name: "New", newPan: true, want: "pool: Config.New panicked: boom\n", created: "pool: Config.New panicked or did not return"},
		{name: "New with a breaker", newPan: true, onCall: func(breaker.CallEvent) {},
			want: "pool: Config.New panicked: boom\n", created: "pool: Config.New panicked or did not return"},
		{name: "OnCall", onCall: func(breaker.CallEvent) { panic("boom") },
			want: "pool: a function of Config.Breaker's Settings panicked: boom\n", created: "pool: a function of Config.Breaker's Settings panicked or did not return"},
		{name: "IsFailure", newErr: true, isFail: func(error) bool { panic("boom") },
			want: "pool: a function of Config.Breaker's Settings panicked: boom\n", created: "pool: a function of Config.Breaker's Settings panicked or did not return"},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var created []pool.CreateEvent
				var mu sync.Mutex
				cfg := pool.Config[int]{
					MaxSize: 1,
					New: func(context.Context) (int, error) {
						if c.newPan {
							panic("boom")
						}
						if c.newErr {
							return 0, errors.New("down")
						}
						return 1, nil
					},
					Close: func(int) error { return nil },
					Hooks: pool.Hooks{OnCreate: func(e pool.CreateEvent) {
						mu.Lock()
						created = append(created, e)
						mu.Unlock()
					}},
				}
				if c.onCall != nil || c.isFail != nil {
					cfg.Breaker = breaker.New(breaker.Settings{OnCall: c.onCall, IsFailure: c.isFail})
				}
				p, err := pool.New(cfg)
				require.NoError(t, err)
				pv, _ := edge16Acquire(p)
				synctest.Wait()
				perr, ok := pv.(error)
				require.True(t, ok, "Acquire panicked with %#v", pv)
				require.True(t, strings.HasPrefix(perr.Error(), c.want), "Acquire panicked with %q", perr.Error())
				mu.Lock()
				require.Len(t, created, 1)
				require.EqualError(t, created[0].Err, c.created)
				mu.Unlock()
				require.NoError(t, p.Close(context.Background()))
			})
		})
	}
}

// TestEdge16BreakerPanicsBeforeNew: a function of the Breaker's Settings
// that panics before New is called (OnCall told of a refusal, the breaker
// open) is named as such, and New is not called.
func TestEdge16BreakerPanicsBeforeNew(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := breaker.New(breaker.Settings{FailureThreshold: 1, OpenTimeout: time.Hour, OnCall: func(e breaker.CallEvent) {
			if e.Outcome == breaker.Rejected {
				panic("refused")
			}
		}})
		_ = b.Execute(context.Background(), func(context.Context) error { return errors.New("down") })
		require.Equal(t, breaker.Open, b.State())
		news := 0
		p, err := pool.New(pool.Config[int]{
			MaxSize: 1,
			Breaker: b,
			New:     func(context.Context) (int, error) { news++; return 1, nil },
		})
		require.NoError(t, err)
		pv, _ := edge16Acquire(p)
		synctest.Wait()
		perr, ok := pv.(error)
		require.True(t, ok, "Acquire panicked with %#v", pv)
		require.True(t, strings.HasPrefix(perr.Error(), "pool: a function of Config.Breaker's Settings panicked: refused\n"), "%q", perr.Error())
		require.Zero(t, news)
		require.Equal(t, 0, p.Stats().Total)
		require.NoError(t, p.Close(context.Background()))
	})
}
