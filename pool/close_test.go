package pool

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
)

// TestCloseFromPoolGoroutineReturnsAtCtxEnd: a Close called from a function
// of Config that the pool's own goroutine runs (the background HealthCheck,
// or Config.Close of a resource the sweep found expired) waits for that very
// function, and so for ever if it waited for the goroutine's end regardless
// of ctx. It returns when its ctx ends; the goroutine then ends, the pool
// whole and closed.
func TestCloseFromPoolGoroutineReturnsAtCtxEnd(t *testing.T) {
	for _, from := range []string{"HealthCheck", "Close"} {
		t.Run(from, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var p *Pool[int]
				var calls, closes atomic.Int32
				closed := make(chan error, 1)
				closeFromHere := func() {
					if calls.Add(1) == 1 {
						ctx, cancel := context.WithTimeout(context.Background(), time.Second)
						defer cancel()
						closed <- p.Close(ctx)
					}
				}
				cfg := Config[int]{
					New:               func(context.Context) (int, error) { return 1, nil },
					MaxSize:           1,
					HealthCheckPeriod: 10 * time.Millisecond,
					Close: func(int) error {
						closes.Add(1)
						if from == "Close" {
							closeFromHere()
						}
						return nil
					},
				}
				if from == "HealthCheck" {
					cfg.HealthCheck = func(context.Context, int) error { closeFromHere(); return nil }
					cfg.HealthCheckSkip = time.Millisecond
				} else {
					cfg.MaxLifetime = 5 * time.Millisecond
					cfg.MaxLifetimeJitter = NoLifetimeJitter
				}
				var err error
				p, err = New(cfg)
				require.NoError(t, err)
				r, err := p.Acquire(t.Context())
				require.NoError(t, err)
				r.Release() // idle: the next sweep checks it, or finds it expired
				select {
				case err := <-closed:
					require.Equal(t, context.DeadlineExceeded, err, "Close waited for the function that called it")
				case <-time.After(time.Minute):
					t.Fatalf("Close called from the pool's goroutine, with a ctx of 1s, has not returned after a minute")
				}
				synctest.Wait()
				require.NoError(t, p.Close(t.Context()), "nothing left to wait for")
				s := p.Stats()
				require.Equal(t, 0, s.Total, "%+v", s)
				require.Equal(t, int32(1), closes.Load(), "the resource closed once")
				_, err = p.Acquire(t.Context())
				require.Equal(t, ErrClosed, err)
			})
		})
	}
}

// TestSweepStopsCheckingOnceClosed: a background sweep that finds the pool
// closed between two health checks runs no more of them: the values are
// about to be closed, and the checks would only delay it.
func TestSweepStopsCheckingOnceClosed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var p *Pool[int]
		var made, checks, closes atomic.Int32
		p = mustNew(t, Config[int]{
			New:     func(context.Context) (int, error) { return int(made.Add(1)), nil },
			Close:   func(int) error { closes.Add(1); return nil },
			MaxSize: 2,
			HealthCheck: func(context.Context, int) error {
				checks.Add(1)
				ctx, cancel := context.WithCancel(context.Background())
				cancel()
				require.Equal(t, context.Canceled, p.Close(ctx), "a resource is under this check")
				return nil
			},
			HealthCheckSkip:   time.Millisecond,
			HealthCheckPeriod: 10 * time.Millisecond,
		})
		r1, err := p.Acquire(t.Context())
		require.NoError(t, err)
		r2, err := p.Acquire(t.Context())
		require.NoError(t, err)
		r1.Release()
		r2.Release()
		time.Sleep(15 * time.Millisecond)
		synctest.Wait()
		require.NoError(t, p.Close(t.Context()))
		require.Equal(t, int32(1), checks.Load(), "checks run after Close")
		require.Equal(t, int32(2), closes.Load())
		require.Equal(t, 0, p.Stats().Total)
	})
}
