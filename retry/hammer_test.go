package retry_test

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

	"github.com/ctxsync/ctxsync/internal/testutil"
	"github.com/ctxsync/ctxsync/retry"
)

var errPerm = errors.New("permanent")

// TestHammer: goroutines share a Budget and a few policies, and make calls
// whose attempts fail, succeed, fail for good, ask for a RetryAfter (some
// beyond MaxRetryAfter) or outlive their AttemptTimeout, under ctxs
// cancelled at random. Each call's result agrees with what its attempts
// did, OnRetry sees the attempts in order with waits no shorter than asked
// and never one beyond MaxRetryAfter, the budget's retries stay within
// ratio × first attempts + reserve, and every goroutine and timer is gone at
// the end (synctest and goleak check that).
func TestHammer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) { hammer(t, testutil.HammerRounds(8)) })
}

func hammer(t *testing.T, rounds int) {
	const ratio, perSecond = 0.3, 2.0
	budget := retry.NewBudget(ratio, perSecond)
	var firsts, retries atomic.Int64
	policies := []retry.Policy{
		{MaxAttempts: 4, InitialDelay: ms, MaxDelay: 20 * ms},
		{MaxAttempts: retry.NoLimit, MaxElapsed: 300 * ms, InitialDelay: 2 * ms, Jitter: retry.EqualJitter},
		{MaxAttempts: 6, InitialDelay: ms, Jitter: retry.DecorrelatedJitter, AttemptTimeout: 5 * ms},
		{MaxAttempts: 3, NoDelay: true},
		{MaxAttempts: 5, InitialDelay: ms, MaxRetryAfter: 10 * ms},
	}
	start := time.Now()
	var wg sync.WaitGroup
	for g := range 32 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(g), 7))
			for round := range rounds {
				p := policies[r.IntN(len(policies))]
				shared := r.IntN(2) == 0
				if shared {
					p.Budget = budget
				}
				p.Retryable = func(err error) bool { return !errors.Is(err, errFail) || r.IntN(8) != 0 }
				if err := hammerCall(r, p, shared, &firsts, &retries); err != nil {
					t.Errorf("goroutine %d round %d: %v", g, round, err)
					return
				}
			}
		})
	}
	wg.Wait()
	if el := time.Since(start); el >= 10*time.Second {
		return // the bound below holds for one window of the budget
	}
	t.Logf("first attempts %d, retries %d, virtual time %v", firsts.Load(), retries.Load(), time.Since(start))
	if max := ratio*float64(firsts.Load()) + perSecond*10; float64(retries.Load()) > max {
		t.Fatalf("the budget let %d retries for %d first attempts, want at most %v", retries.Load(), firsts.Load(), max)
	}
}

// hammerCall makes one call and checks its result.
func hammerCall(r *rand.Rand, p retry.Policy, shared bool, firsts, retries *atomic.Int64) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ends := p.AttemptTimeout > 0 // some ctx of the attempt ends on its own
	switch r.IntN(4) {
	case 0:
		time.AfterFunc(time.Duration(r.IntN(30))*ms, cancel)
		ends = true
	case 1:
		ends = true
		var c2 context.CancelFunc
		ctx, c2 = context.WithTimeout(ctx, time.Duration(r.IntN(40))*ms)
		defer c2()
	case 2:
		if r.IntN(8) == 0 {
			cancel()
			ends = true
		}
	}
	var (
		attempts int
		lastErr  error
		onRetry  []int
		badWait  error
	)
	p.OnRetry = func(n int, err error, d time.Duration) {
		onRetry = append(onRetry, n)
		if shared {
			retries.Add(1)
		}
		var ra interface{ RetryAfter() time.Duration }
		switch {
		case !errors.As(err, &ra):
		case d < ra.RetryAfter():
			badWait = fmt.Errorf("wait %v below RetryAfter %v", d, ra.RetryAfter())
		case ra.RetryAfter() > maxRetryAfter(p):
			badWait = fmt.Errorf("RetryAfter %v waited, beyond MaxRetryAfter %v", ra.RetryAfter(), maxRetryAfter(p))
		}
	}
	err := p.Execute(ctx, func(actx context.Context) error {
		attempts++
		if attempts == 1 && shared {
			firsts.Add(1)
		}
		time.Sleep(time.Duration(r.IntN(3)) * ms)
		switch r.IntN(6) {
		case 0:
			lastErr = nil
		case 1:
			lastErr = retry.Permanent(errPerm)
		case 2:
			lastErr = retryAfterErr(time.Duration(r.IntN(20)) * ms)
		case 3:
			if !ends {
				lastErr = errFail
				break
			}
			<-actx.Done() // an AttemptTimeout or the caller's ctx
			lastErr = actx.Err()
		default:
			lastErr = errFail
		}
		return lastErr
	})
	if badWait != nil {
		return badWait
	}
	for i, n := range onRetry {
		if n != i+1 {
			return fmt.Errorf("OnRetry attempts %v, want 1, 2, ...", onRetry)
		}
	}
	if attempts == 0 {
		if err == nil || err != ctx.Err() {
			return fmt.Errorf("no attempt, Execute = %v, want ctx.Err() %v", err, ctx.Err())
		}
		return nil
	}
	if lastErr == nil {
		if err != nil {
			return fmt.Errorf("the last attempt succeeded, Execute = %v", err)
		}
		return nil
	}
	var rerr *retry.Error
	if !errors.As(err, &rerr) {
		return fmt.Errorf("the last attempt failed, Execute = %v, want a *retry.Error", err)
	}
	switch {
	case rerr.Attempts != attempts:
		return fmt.Errorf("Error.Attempts = %d, want %d", rerr.Attempts, attempts)
	case rerr.Last != lastErr:
		return fmt.Errorf("Error.Last = %v, want %v", rerr.Last, lastErr)
	case len(onRetry) != attempts-1 && rerr.Reason != retry.ContextDone:
		return fmt.Errorf("%d OnRetry for %d attempts", len(onRetry), attempts)
	case p.MaxAttempts > 0 && attempts > p.MaxAttempts:
		return fmt.Errorf("%d attempts, MaxAttempts %d", attempts, p.MaxAttempts)
	case rerr.Reason == retry.ContextDone && (ctx.Err() == nil || !errors.Is(err, ctx.Err())):
		return fmt.Errorf("Execute = %v stopped by the ctx, ctx.Err() = %v", err, ctx.Err())
	case rerr.Reason != retry.ContextDone && ctx.Err() != nil && rerr.Reason != retry.DeadlineReached:
		// The ctx may end just after Execute returned: only a ctx done
		// before the attempt returned must show.
	case rerr.Reason == retry.NotRetryable && !errors.Is(err, errPerm) && !errors.Is(err, errFail):
		return fmt.Errorf("not retryable: %v", err)
	case rerr.Reason == retry.BudgetSpent && !shared:
		return fmt.Errorf("BudgetSpent without a budget")
	case rerr.Reason == retry.MaxRetryAfterExceeded:
		var ra interface{ RetryAfter() time.Duration }
		if !errors.As(lastErr, &ra) || ra.RetryAfter() <= maxRetryAfter(p) {
			return fmt.Errorf("MaxRetryAfterExceeded (%v) after %v", maxRetryAfter(p), lastErr)
		}
	}
	return nil
}

// maxRetryAfter is p's MaxRetryAfter, its default filled in.
func maxRetryAfter(p retry.Policy) time.Duration {
	if p.MaxRetryAfter != 0 {
		return p.MaxRetryAfter
	}
	return max(10*time.Second, p.MaxDelay)
}
