package group_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ctxsync/ctxsync"
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
		if pulled.Load() != calls.Load() {
			t.Errorf("ForEach pulled %d items and called f on %d: an item was dropped", pulled.Load(), calls.Load())
		}
		cancel()
	}
}

// TestHammerMapAllGoexit: MapAll over items whose f may call runtime.Goexit,
// under a ctx that may end at any time. When MapAll returns, an item's error
// is ErrGoexit exactly when its f called runtime.Goexit; when an f called it
// in the caller's goroutine, that goroutine ended, once no call was in flight.
func TestHammerMapAllGoexit(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 2))
	for range testutil.HammerRounds(300) {
		if t.Failed() {
			return
		}
		ctx, cancel := context.WithCancel(context.Background())
		if r.IntN(2) == 0 {
			stop := time.AfterFunc(time.Duration(r.IntN(200))*time.Microsecond, cancel)
			defer stop.Stop()
		}
		n, limit := r.IntN(30), r.IntN(5)
		kinds, items := make([]int, n), make([]int, n)
		for i := range kinds {
			kinds[i] = r.IntN(6) // 0: Goexit, 1: waits on ctx, 2: fails, else: yields
			items[i] = i
		}
		exited := make([]atomic.Bool, n)
		var running atomic.Int32
		var res []int
		var errs []error
		returned := false
		done := make(chan struct{})
		go func() {
			defer close(done)
			res, errs = group.MapAll(ctx, items, limit, func(ctx context.Context, i int) (int, error) {
				running.Add(1)
				defer running.Add(-1)
				switch kinds[i] {
				case 0:
					runtime.Gosched()
					exited[i].Store(true)
					runtime.Goexit()
				case 1:
					select {
					case <-ctx.Done():
						return 0, ctx.Err()
					case <-time.After(time.Duration(rand.IntN(50)) * time.Microsecond):
					}
				case 2:
					return -1, errors.New("failed")
				default:
					runtime.Gosched()
				}
				return i + 100, nil
			})
			returned = true
		}()
		<-done
		if running.Load() != 0 {
			t.Errorf("MapAll: %d calls in flight after its caller ended or it returned", running.Load())
		}
		cancel()
		if !returned {
			continue // a Goexit in the caller's goroutine
		}
		for i := range kinds {
			var e error
			if errs != nil {
				e = errs[i]
			}
			switch {
			case exited[i].Load() != (e == group.ErrGoexit):
				t.Fatalf("MapAll: error %d = %v; its f called Goexit: %v", i, e, exited[i].Load())
			case e == nil && res[i] != i+100:
				t.Fatalf("MapAll: result %d = %d, want %d", i, res[i], i+100)
			}
		}
	}
}

// TestHammerForEachQueue: ForEach over a ctxsync.Queue's All, fed by a
// producer, under a ctx that may end at any time and with calls that may
// fail. Whatever the schedule, every job put is either handled by f, which
// marks it done, or handed back by CloseNow, and Join then returns.
func TestHammerForEachQueue(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 3))
	for range testutil.HammerRounds(300) {
		if t.Failed() {
			return
		}
		ctx, cancel := context.WithCancel(context.Background())
		stop := time.AfterFunc(time.Duration(r.IntN(300))*time.Microsecond, cancel)
		q := ctxsync.NewQueue[int](r.IntN(4))
		n, limit, failAt := r.IntN(60), r.IntN(5), r.IntN(80)
		var put atomic.Int32
		produced := make(chan struct{})
		go func() {
			defer close(produced)
			for i := range n {
				if q.Put(context.Background(), i) != nil {
					return
				}
				put.Add(1)
				if i%8 == 0 {
					time.Sleep(time.Duration(i) * time.Microsecond)
				}
			}
		}()
		var handled atomic.Int32
		err := group.ForEach(ctx, q.All(ctx), limit, func(ctx context.Context, job int) error {
			defer q.TaskDone()
			handled.Add(1)
			if job == failAt {
				return errors.New("failed")
			}
			if job%3 == 0 {
				runtime.Gosched()
			}
			return nil
		})
		if err != nil && err.Error() != "failed" && err != context.Canceled {
			t.Errorf("ForEach = %v", err)
		}
		back := q.CloseNow()
		<-produced // its next Put fails, the queue closed
		if h, p := int(handled.Load()), int(put.Load()); h+len(back) != p {
			t.Fatalf("%d jobs put, %d handled by f, %d handed back: %d lost", p, h, len(back), p-h-len(back))
		}
		jctx, jcancel := context.WithTimeout(context.Background(), 10*time.Second)
		if err := q.Join(jctx); err != nil {
			t.Fatalf("Join = %v, with %d jobs unfinished", err, q.Unfinished())
		}
		jcancel()
		stop.Stop()
		cancel()
	}
}
