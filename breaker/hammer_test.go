package breaker

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync/internal/testutil"
)

// TestHammer: concurrent calls with random outcomes, panics in the func and
// in IsFailure, cancellations, slow calls, State polling and manual control,
// with an OnStateChange and an OpenBackoff that call the breaker back. Trial
// calls in flight never exceed HalfOpenMaxCalls, no trial slot is kept, the
// reported changes form one chain, every call lands once in Metrics' Total
// (when no Reset clears it), and the breaker ends usable.
func TestHammer(t *testing.T) {
	for _, manual := range []bool{true, false} {
		t.Run(fmt.Sprintf("manual=%t", manual), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { hammer(t, manual) })
		})
	}
}

// hammer is TestHammer: with manual, ForceOpen and Reset too, else Disable
// and Enable.
func hammer(t *testing.T, manual bool) {
	var tr transitions
	var b *Breaker
	var told [Rejected + 1]atomic.Int64 // by outcome
	var badPredicates atomic.Int64      // calls whose IsFailure panicked: not told
	var misnamed atomic.Int64           // events whose Name was not the breaker's
	b = New(Settings{
		Name:             "hammer",
		FailureThreshold: 3, HalfOpenMaxCalls: 2, Jitter: 0.5,
		OpenBackoff: func(n int) time.Duration {
			_ = b.Counts()
			return time.Duration(min(n, 4)) * 10 * time.Millisecond
		},
		IsFailure: panickyIsFailure,
		OnStateChange: func(from, to State, c Counts) {
			_ = b.State()
			tr.record(from, to, c)
		},
		OnCall: func(e CallEvent) {
			_ = b.State() // outside the lock, as the change of state it may follow
			told[e.Outcome].Add(1)
			if e.Name != "hammer" {
				misnamed.Add(1)
			}
		},
	})
	var trials, maxTrials atomic.Int32
	var admitted, refused atomic.Int64
	var wg sync.WaitGroup
	for g := range 24 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(g), 2))
			outcome := func(ctx context.Context) error {
				time.Sleep(time.Duration(r.IntN(3)) * time.Millisecond)
				switch r.IntN(10) {
				case 0:
					panic("fn panicked")
				case 1:
					badPredicates.Add(1)
					return errBadPredicate // IsFailure panics
				case 2, 3, 4:
					return errBoom
				}
				return ctx.Err()
			}
			for range testutil.HammerRounds(100) {
				ctx, cancel := context.WithTimeout(t.Context(), time.Duration(r.IntN(10))*time.Millisecond)
				switch k := r.IntN(24); {
				case k == 0 && manual:
					b.ForceOpen()
				case k == 1 && manual:
					b.Reset()
				case k == 0 && r.IntN(8) == 0:
					b.Disable()
				case k == 1:
					b.Enable()
				case k == 2:
					_, _, _ = b.State(), b.Counts(), b.Metrics()
				case k == 3:
					done, err := b.Allow(ctx)
					switch {
					case err == nil:
						admitted.Add(1)
						err := func() (err error) {
							defer func() {
								if recover() != nil {
									err = errBoom // the call panicked: a failure
								}
							}()
							return outcome(ctx)
						}()
						func() {
							defer func() { _ = recover() }()
							done(err)
						}()
					case errors.Is(err, ErrOpen):
						refused.Add(1)
					}
				default:
					ran := false
					var err error
					func() {
						defer func() { _ = recover() }()
						err = b.Execute(ctx, func(ctx context.Context) error {
							ran = true
							admitted.Add(1)
							if b.State() == HalfOpen {
								n := trials.Add(1)
								defer trials.Add(-1)
								for m := maxTrials.Load(); n > m && !maxTrials.CompareAndSwap(m, n); m = maxTrials.Load() {
								}
							}
							return outcome(ctx)
						})
					}()
					if !ran && errors.Is(err, ErrOpen) {
						refused.Add(1)
					}
				}
				cancel()
				time.Sleep(time.Duration(r.IntN(4)) * time.Millisecond)
			}
		})
	}
	wg.Wait()
	require.LessOrEqual(t, maxTrials.Load(), int32(2), "more trial calls than HalfOpenMaxCalls")
	state := "closed"
	for _, c := range tr.list() {
		from, to, _ := cutArrow(c)
		require.Equal(t, state, from)
		state = to
	}
	m := b.Metrics()
	require.Equal(t, m.Total.Successes+m.Total.Failures+m.Total.Ignored, m.Total.Requests)
	if !manual {
		require.Equal(t, admitted.Load(), m.Total.Requests, "calls missing from Total, or counted twice")
		require.Equal(t, refused.Load(), m.Total.Rejected)
		require.Equal(t, m.Total.Successes, told[Success].Load(), "successes told to OnCall")
		require.Equal(t, m.Total.Failures, told[Failure].Load(), "failures told to OnCall")
		require.Equal(t, m.Total.Ignored, told[Ignored].Load()+badPredicates.Load(), "ignored calls told to OnCall")
		require.Equal(t, m.Total.Rejected, told[Rejected].Load(), "refusals told to OnCall")
		require.Zero(t, misnamed.Load(), "events told to OnCall without Settings.Name")
	}
	b.mu.Lock()
	probes := b.probes
	b.mu.Unlock()
	require.Zero(t, probes, "a trial slot was kept")

	b.Reset()
	require.NoError(t, b.Execute(t.Context(), succeed))
	for range 3 {
		require.Equal(t, errBoom, b.Execute(t.Context(), fail))
	}
	time.Sleep(time.Second)
	for range 2 {
		done, err := b.Allow(t.Context())
		require.NoError(t, err, "a trial slot was kept")
		defer done(nil)
	}
}
