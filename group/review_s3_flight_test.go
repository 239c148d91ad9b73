package group_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ctxsync/ctxsync"
	"github.com/ctxsync/ctxsync/group"
)

// Flight and Lazy shared by the tasks of a group that a failing task
// cancels: every Do and Get returns, the call in flight is cancelled once
// the last of them leaves, nothing is left in the Flight, and the Lazy runs
// init again for the next Get rather than keep the cancelled run's error.
func TestReviewS3_FlightAndLazyInGroupTasks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var f ctxsync.Flight[string, int]
		var runs, cancelled atomic.Int32
		slow := func(ctx context.Context) (int, error) {
			runs.Add(1)
			select {
			case <-ctx.Done():
				cancelled.Add(1)
				return 0, ctx.Err()
			case <-time.After(time.Hour):
				return 1, nil
			}
		}
		var inits atomic.Int32
		lazy := ctxsync.NewLazy(func(ctx context.Context) (int, error) {
			if inits.Add(1) == 1 {
				<-ctx.Done()
				return 0, ctx.Err()
			}
			return 7, nil
		})
		boom := errors.New("boom")
		g, _ := group.New(context.Background(), group.Options{Limit: 10, CancelOnError: true})
		for range 6 {
			_ = g.Go(func(ctx context.Context) error {
				if _, err, _ := f.Do(ctx, "k", slow); err == nil {
					t.Error("Do = nil after the group was cancelled")
				}
				return nil
			})
		}
		_ = g.Go(func(ctx context.Context) error {
			if _, err := lazy.Get(ctx); err == nil {
				t.Error("Get = nil after the group was cancelled")
			}
			return nil
		})
		_ = g.Go(func(ctx context.Context) error {
			time.Sleep(time.Millisecond)
			return boom
		})
		if err := g.Wait(); !errors.Is(err, boom) {
			t.Fatalf("Wait = %v, want boom", err)
		}
		synctest.Wait()
		if n := f.Len(); n != 0 {
			t.Errorf("Flight.Len() = %d after every caller left, want 0", n)
		}
		if r, c := runs.Load(), cancelled.Load(); r != c {
			t.Errorf("%d runs of fn, %d cancelled: a run was left going with nobody waiting", r, c)
		}
		if v, err := lazy.Get(context.Background()); err != nil || v != 7 {
			t.Errorf("Lazy.Get after a cancelled run = %v, %v; want 7, nil (init runs again)", v, err)
		}
	})
}

// KeyedLock with a WaitGroup: tasks lock keys at random with ctxs that end
// at random; once the WaitGroup's Wait returns, every key is free and
// forgotten, and mutual exclusion held throughout.
func TestReviewS3_KeyedLockAndWaitGroup(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var k ctxsync.KeyedLock[int]
		var wg ctxsync.WaitGroup
		var inside [4]atomic.Int32
		for i := range 40 {
			wg.Go(func() {
				key := i % 4
				ctx, cancel := context.WithTimeout(context.Background(), time.Duration(i%5)*time.Millisecond)
				defer cancel()
				if k.Lock(ctx, key) != nil {
					return
				}
				if inside[key].Add(1) != 1 {
					t.Errorf("two holders of key %d", key)
				}
				time.Sleep(time.Millisecond)
				inside[key].Add(-1)
				k.Unlock(key)
			})
		}
		if err := wg.Wait(context.Background()); err != nil {
			t.Fatal(err)
		}
		if n := k.Len(); n != 0 {
			t.Errorf("KeyedLock.Len() = %d once every task returned, want 0", n)
		}
	})
}
