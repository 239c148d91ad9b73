package retry_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ctxsync/ctxsync/internal/testutil"
	"github.com/ctxsync/ctxsync/retry"
)

// hedgePanic is the value an attempt of TestHammerHedge panics with.
type hedgePanic struct{ call, attempt int }

// TestHammerHedge: goroutines share a Budget and make hedged calls with
// random delays (fixed, or following the latency), limits, latencies and
// outcomes (success, failure, Permanent failure, panic), under ctxs that
// end at random. Each call returns a value or error that one of its own
// attempts gave, or its ctx's error, or panics with one of its attempts'
// panics; when it returns, no attempt of it is left with a live ctx once
// the attempts have run out; hedges stay within the Budget; and no
// goroutine or timer is left (synctest and goleak check that).
func TestHammerHedge(t *testing.T) {
	synctest.Test(t, func(t *testing.T) { hammerHedge(t, testutil.HammerRounds(40)) })
}

func hammerHedge(t *testing.T, rounds int) {
	const goroutines = 8
	const ratio, minPerSecond = 0.2, 1.0
	b := retry.NewBudget(ratio, minPerSecond)
	var calls, attempts atomic.Int64
	var ctxsMu sync.Mutex
	var allCtxs []context.Context // of every attempt
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 43))
			for r := range rounds {
				call := g*rounds + r
				ctxs := hammerHedgeCall(t, rng, b, call, &attempts)
				ctxsMu.Lock()
				allCtxs = append(allCtxs, ctxs...)
				ctxsMu.Unlock()
				calls.Add(1)
			}
		})
	}
	wg.Wait()
	t.Logf("%d calls, %d copies", calls.Load(), attempts.Load()-calls.Load())
	// Copies that lost may still be returning: once they have, no
	// attempt's ctx is live.
	synctest.Wait()
	ctxsMu.Lock()
	defer ctxsMu.Unlock()
	for i, ctx := range allCtxs {
		if ctx.Err() == nil {
			t.Errorf("attempt ctx %d still live after its call", i)
		}
	}
	// All calls ran within one window of the Budget (10s of virtual
	// time): copies are at most ratio × calls + minPerSecond × 10.
	if copies := attempts.Load() - calls.Load(); float64(copies) > ratio*float64(calls.Load())+minPerSecond*10 {
		t.Errorf("%d copies for %d calls, want at most %v", copies, calls.Load(), ratio*float64(calls.Load())+minPerSecond*10)
	}
}

// hammerHedgeCall makes one call and checks its result; it returns the
// ctxs its attempts have started with so far.
func hammerHedgeCall(t *testing.T, rng *rand.Rand, b *retry.Budget, call int, attempts *atomic.Int64) []context.Context {
	h := retry.Hedge{Budget: b, MaxHedges: rng.IntN(5) - 1}
	if rng.IntN(2) == 0 {
		h.Delay = time.Duration(1+rng.IntN(20)) * time.Millisecond
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	switch rng.IntN(4) {
	case 0:
		ctx, cancel = context.WithTimeout(ctx, time.Duration(rng.IntN(30))*time.Millisecond)
		defer cancel()
	case 1:
		time.AfterFunc(time.Duration(rng.IntN(30))*time.Millisecond, cancel)
	}
	// Each attempt's plan, drawn before the call: the attempts run in
	// goroutines of their own, and rng is this goroutine's.
	type plan struct {
		lat     time.Duration
		outcome int // 0 success, 1 failure, 2 Permanent, 3 panic
	}
	plans := make([]plan, 64)
	for i := range plans {
		p := plan{lat: time.Duration(rng.IntN(25)) * time.Millisecond}
		switch x := rng.IntN(100); {
		case x < 60:
		case x < 85:
			p.outcome = 1
		case x < 95:
			p.outcome = 2
		default:
			p.outcome = 3
		}
		plans[i] = p
	}
	var (
		mu      sync.Mutex
		ctxs    []context.Context
		results = map[int]error{} // value → error, of every attempt that returned
	)
	fn := func(actx context.Context) (int, error) {
		mu.Lock()
		id := len(ctxs)
		ctxs = append(ctxs, actx)
		mu.Unlock()
		attempts.Add(1)
		p := plans[id%len(plans)]
		select {
		case <-time.After(p.lat):
		case <-actx.Done():
			return -1, actx.Err()
		}
		v := call*1000 + id
		var err error
		switch p.outcome {
		case 1:
			err = attemptError{id}
		case 2:
			err = retry.Permanent(attemptError{id})
		case 3:
			panic(hedgePanic{call, id})
		}
		mu.Lock()
		results[v] = err
		mu.Unlock()
		return v, err
	}
	var v int
	var err error
	panicked := func() (pv any) {
		defer func() { pv = recover() }()
		v, err = retry.DoHedged(ctx, h, fn)
		return nil
	}()
	switch p := panicked.(type) {
	case nil:
	case hedgePanic:
		if p.call != call {
			t.Errorf("call %d panicked with call %d's panic", call, p.call)
		}
		mu.Lock()
		defer mu.Unlock()
		return ctxs
	default:
		panic(p)
	}
	mu.Lock()
	got, ok := results[v]
	mu.Unlock()
	switch {
	case err == nil && (!ok || got != nil):
		t.Errorf("call %d = %d, nil: not the value of a success of its own", call, v)
	case err != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) && ctx.Err() == nil:
		var ae attemptError
		if !errors.As(err, &ae) {
			t.Errorf("call %d = %v with its ctx alive", call, err)
		}
	case err != nil && ctx.Err() == nil && (!ok || got != err):
		t.Errorf("call %d = %d, %v: not the result of a failure of its own", call, v, err)
	}
	mu.Lock()
	defer mu.Unlock()
	return ctxs
}
