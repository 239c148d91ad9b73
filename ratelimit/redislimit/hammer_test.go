package redislimit

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync/internal/testutil"
	"github.com/ctxsync/ctxsync/ratelimit"
)

// hammer runs goroutines that make random calls to l for d, with contexts
// cancelled at random (before the call, during it, or never), short
// deadlines, and now and then a ctx whose method panics, and checks each result; it returns the events granted. On a
// loaded machine every call of d may time out: it goes on then, for up to
// 10 s more, until one is granted.
func hammer(t *testing.T, l *Limiter, d time.Duration) int64 {
	var granted atomic.Int64
	var wg sync.WaitGroup
	stop := time.Now().Add(d)
	late := stop.Add(10 * time.Second)
	more := func() bool {
		now := time.Now()
		return now.Before(stop) || (granted.Load() == 0 && now.Before(late))
	}
	for range 16 {
		wg.Go(func() {
			for more() {
				ctx, cancel := context.WithCancel(context.Background())
				switch rand.N(4) {
				case 0:
					cancel()
				case 1:
					time.AfterFunc(time.Duration(rand.N(300))*time.Microsecond, cancel)
				case 2:
					ctx, cancel = context.WithTimeout(ctx, time.Duration(rand.N(2000))*time.Microsecond)
				}
				if rand.N(8) == 0 {
					// The caller's code panics, at one of its ctx's
					// method calls: the call leaves nothing behind (the
					// checks after the hammer), and the events it may have
					// taken count for nobody.
					pctx := &testutil.OnceCtx{Context: ctx, PanicAt: 1 + rand.Int32N(6)}
					r := testutil.PanicOf(func() {
						if rand.N(4) == 0 {
							_ = l.WaitN(pctx, "h", 1)
						} else {
							_, _ = l.TakeContext(pctx, "h", 1)
						}
					})
					if r != nil && r != testutil.ErrCtxPanic {
						t.Errorf("panicked with %v", r)
					}
					cancel()
					continue
				}
				n := 1 + rand.N(3)
				var err error
				if rand.N(4) == 0 {
					// Within a few milliseconds: nothing refills on miniredis.
					ctx, cancel2 := context.WithTimeout(ctx, time.Duration(rand.N(5000))*time.Microsecond)
					err = l.WaitN(ctx, "h", n)
					cancel2()
					if err == nil {
						granted.Add(int64(n))
					} else if !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) &&
						!errors.Is(err, ratelimit.ErrWouldExceedDeadline) {
						t.Errorf("WaitN = %v", err)
					}
				} else {
					var dec ratelimit.Decision
					dec, err = l.TakeContext(ctx, "h", n)
					switch {
					case err == nil:
						if dec.Allowed {
							granted.Add(int64(n))
						}
					case errors.Is(err, ErrUnavailable):
						if dec.Allowed {
							t.Errorf("FailClosed allowed")
						}
					case err == context.Canceled || err == context.DeadlineExceeded:
						if dec != (ratelimit.Decision{}) {
							t.Errorf("a call that gave up returned %+v", dec)
						}
					default:
						t.Errorf("AllowN = %v", err)
					}
				}
				cancel()
			}
		})
	}
	wg.Wait()
	return granted.Load()
}

// TestHammer: calls cancelled at random never break the limit, nor leave a
// round trip's place or a queued call behind, and never have more than
// MaxRoundTrips round trips under way.
func TestHammer(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		for _, rt := range []int{1, 3, -1} {
			for _, fast := range []bool{false, true} {
				t.Run(fmt.Sprintf("MaxRoundTrips=%d/ContextTimeoutEnabled=%v", rt, fast), func(t *testing.T) {
					c := redis.NewClient(&redis.Options{Addr: b.addr, MaxRetries: -1, ContextTimeoutEnabled: fast})
					t.Cleanup(func() { _ = c.Close() })
					f := countInFlight(c)
					// miniredis's clock stands still: nothing refills.
					rate, burst := 2000.0, 20
					if b.mini != nil {
						rate = 1e-3
					}
					// On a loaded machine every round trip of a run may
					// pass the Timeout (FailClosed then refuses), and the
					// calls that gave up may have spent the whole burst
					// for nobody (see AllowN), which on miniredis nothing
					// refills: run again, on a bucket of its own, until a
					// run granted something, so that the checks are not
					// made of nothing. Each run is checked.
					var granted int64
					for run, deadline := 0, time.Now().Add(30*time.Second); granted == 0 && time.Now().Before(deadline); run++ {
						l := newLimiter(t, Config{Client: c, Rate: rate, Burst: burst, MaxRoundTrips: rt, Policy: FailClosed,
							Prefix: fmt.Sprintf("%shammer%d%v-%d:", b.prefix, rt, fast, run)})
						start := time.Now()
						granted = hammer(t, l, 200*time.Millisecond)
						bound := float64(burst)
						if b.mini == nil {
							bound += rate * time.Since(start).Seconds()
						}
						require.LessOrEqual(t, float64(granted), bound)
						require.Eventually(t, func() bool { return f.now.Load() == 0 && l.underway() == 0 }, 5*time.Second, time.Millisecond)
						require.Zero(t, l.queued())
						if rt > 0 {
							require.LessOrEqual(t, f.most.Load(), int64(rt))
						}
					}
					require.Positive(t, granted)
				})
			}
		}
	})
}

// TestHammerFaults: the same while the server's scripts are flushed, its
// clients killed, and the server stopped and resumed, at random: with
// FailClosed the limit holds throughout.
func TestHammerFaults(t *testing.T) {
	srv := ownRedis(t)
	admin := backend{addr: srv.addr}.client(t)
	for _, rt := range []int{1, 3, -1} {
		for _, fast := range []bool{false, true} {
			t.Run(fmt.Sprintf("MaxRoundTrips=%d/ContextTimeoutEnabled=%v", rt, fast), func(t *testing.T) {
				c := redis.NewClient(&redis.Options{Addr: srv.addr, MaxRetries: -1, ContextTimeoutEnabled: fast})
				t.Cleanup(func() { _ = c.Close() })
				f := countInFlight(c)
				const rate, burst = 2000.0, 20
				l := newLimiter(t, Config{Client: c, Rate: rate, Burst: burst, MaxRoundTrips: rt, Policy: FailClosed,
					Timeout: 20 * time.Millisecond, Prefix: fmt.Sprintf("faults%d%v:", rt, fast)})
				ctx := context.Background()
				done := make(chan struct{})
				var faults sync.WaitGroup
				faults.Go(func() {
					for {
						select {
						case <-done:
							return
						case <-time.After(time.Duration(5+rand.N(20)) * time.Millisecond):
						}
						switch rand.N(3) {
						case 0:
							_ = admin.ScriptFlush(ctx).Err()
						case 1:
							_ = admin.ClientKillByFilter(ctx, "TYPE", "normal").Err()
						case 2:
							_ = srv.cmd.Process.Signal(syscall.SIGSTOP)
							time.Sleep(time.Duration(rand.N(40)) * time.Millisecond)
							_ = srv.cmd.Process.Signal(syscall.SIGCONT)
						}
					}
				})
				start := time.Now()
				granted := hammer(t, l, 300*time.Millisecond)
				close(done)
				faults.Wait()
				require.LessOrEqual(t, float64(granted), burst+rate*time.Since(start).Seconds())
				require.Eventually(t, func() bool { return f.now.Load() == 0 && l.underway() == 0 }, 10*time.Second, time.Millisecond)
				require.Zero(t, l.queued())
				if rt > 0 {
					require.LessOrEqual(t, f.most.Load(), int64(rt))
				}
				require.Eventually(t, func() bool {
					d, err := l.TakeContext(ctx, "after", 1)
					return err == nil && d.Allowed
				}, 10*time.Second, 10*time.Millisecond, "decisions did not resume")
			})
		}
	}
}
