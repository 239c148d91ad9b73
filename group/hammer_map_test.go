package group_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ctxsync/ctxsync/group"
	"github.com/ctxsync/ctxsync/internal/testutil"
)

// TestHammerMap runs Map, MapAll and ForEach over random items that succeed,
// fail, yield or wait on ctx, under a parent ctx that may end at any time,
// and checks what must hold whatever the schedule: no call in flight when
// they return, at most limit at once, Map's results exact when it returns
// no error and its error one that f returned or ctx.Err(), MapAll's outcome
// at every index, and ForEach never more than one item ahead of its slots.
func TestHammerMap(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 1))
	errOdd := errors.New("odd")
	for range testutil.HammerRounds(300) {
		if t.Failed() {
			return
		}
		ctx, cancel := context.WithCancel(context.Background())
		if r.IntN(2) == 0 {
			stop := time.AfterFunc(time.Duration(r.IntN(200))*time.Microsecond, cancel)
			defer stop.Stop()
		}
		n, limit := r.IntN(40), r.IntN(6)
		failing := r.IntN(3) == 0
		items := make([]int, n)
		for i := range items {
			items[i] = r.IntN(100)
		}
		var running, most, calls atomic.Int32
		f := func(ctx context.Context, x int) (int, error) {
			calls.Add(1)
			c := running.Add(1)
			defer running.Add(-1)
			for m := most.Load(); c > m && !most.CompareAndSwap(m, c); m = most.Load() {
			}
			switch x % 4 {
			case 0:
				select {
				case <-ctx.Done():
					return 0, ctx.Err()
				case <-time.After(time.Duration(x) * time.Microsecond):
				}
			case 1:
				runtime.Gosched()
			}
			if failing && x%8 == 3 {
				return -1, errOdd
			}
			return x * 2, nil
		}
		check := func(name string) {
			if running.Load() != 0 {
				t.Errorf("%s: %d calls in flight after it returned", name, running.Load())
			}
			if limit > 0 && most.Load() > int32(limit) {
				t.Errorf("%s: %d calls at once under limit %d", name, most.Load(), limit)
			}
			most.Store(0)
		}

		res, err := group.Map(ctx, items, limit, f)
		check("Map")
		switch {
		case err == nil:
			for i, x := range items {
				if res[i] != 2*x {
					t.Fatalf("Map: result %d = %d, want %d", i, res[i], 2*x)
				}
			}
		case err != errOdd && err != context.Canceled:
			t.Errorf("Map = %v, want nil, %v or context.Canceled", err, errOdd)
		}

		res, errs := group.MapAll(ctx, items, limit, f)
		check("MapAll")
		for i, x := range items {
			var e error
			if errs != nil {
				e = errs[i]
			}
			switch {
			case e == nil && res[i] != 2*x:
				t.Fatalf("MapAll: result %d = %d, want %d", i, res[i], 2*x)
			case e != nil && e != errOdd && e != context.Canceled:
				t.Fatalf("MapAll: error %d = %v", i, e)
			}
		}

		var pulled atomic.Int32
		calls.Store(0)
		seq := func(yield func(int) bool) {
			for _, x := range items {
				pulled.Add(1)
				if limit > 0 && pulled.Load()-calls.Load() > int32(limit)+1 {
					t.Errorf("ForEach pulled %d items, %d started, limit %d", pulled.Load(), calls.Load(), limit)
				}
				if !yield(x) {
					return
				}
			}
		}
		err = group.ForEach(ctx, seq, limit, func(ctx context.Context, x int) error {
			_, err := f(ctx, x)
			return err
		})
		check("ForEach")
		if err != nil && err != errOdd && err != context.Canceled {
			t.Errorf("ForEach = %v", err)
		}
		cancel()
	}
}
