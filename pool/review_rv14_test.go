package pool

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
)

// TestRV14_OwedCheckFailingCountsOneWait pins a defect of the owed
// HealthCheck: a queued Acquire handed a resource still owed its check
// (the Acquire that took it idle gave up during the check) runs the check;
// when it fails, the Acquire queues again, and Stats.WaitCount counted the
// one Acquire twice, above EmptyAcquires, which Stats' doc says it is a part
// of ("of those, the ones that queued"); the wait Hooks.OnAcquire was told
// was the second one only, so that its waits no longer summed to
// WaitDuration. Right: an Acquire counts once in WaitCount however many
// times it queues, and its AcquireEvent.Wait is the whole time it waited.
func TestRV14_OwedCheckFailingCountsOneWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var made, checks atomic.Int32
		var broken atomic.Bool
		var waits review2Waits
		p := mustNew(t, Config[int32]{
			New: func(context.Context) (int32, error) {
				if made.Load() > 0 {
					time.Sleep(time.Second) // the second wait takes time too
				}
				return made.Add(1), nil
			},
			HealthCheck: func(ctx context.Context, v int32) error {
				if v == 1 && broken.Load() {
					if checks.Add(1) == 1 {
						<-ctx.Done() // the first taker gives up during the check
						return ctx.Err()
					}
					return errors.New("the first resource is broken")
				}
				return nil
			},
			HealthCheckSkip: NoHealthCheckSkip,
			MaxSize:         1,
			Hooks:           Hooks{OnAcquire: waits.onAcquire},
		})
		t.Cleanup(func() { _ = p.Close(context.Background()) })
		acquireWithin(t, p).Release()
		synctest.Wait() // the first background sweep is over
		broken.Store(true)

		// The first taker: its check waits for its ctx to end.
		ctx, cancel := context.WithCancel(context.Background())
		first := make(chan error, 1)
		checking := make(chan struct{})
		go func() {
			_, err := p.Acquire(&deadlineHookCtx{Context: ctx, hook: func() { close(checking) }})
			first <- err
		}()
		<-checking
		// The next queues behind it.
		next := make(chan int32, 1)
		go func() {
			r, err := p.Acquire(context.Background())
			if err != nil {
				next <- -1
				return
			}
			next <- r.Value()
			r.Release()
		}()
		synctest.Wait()
		require.Equal(t, 1, p.Stats().Waiting)
		time.Sleep(time.Second) // the first wait takes time
		cancel()                // the first gives up; the next is handed r, owed its check, which fails
		require.ErrorIs(t, <-first, context.Canceled)
		require.Equal(t, int32(2), <-next)
		synctest.Wait()

		st := p.Stats()
		assertWaitPair(t, st)
		// Two Acquires waited: the very first, for New, and the next.
		require.EqualValues(t, 2, st.WaitCount, "%+v", st)
		require.Equal(t, 2*time.Second, st.WaitDuration, "%+v", st)
		waits.mu.Lock()
		defer waits.mu.Unlock()
		require.Equal(t, st.WaitDuration, waits.total, "waits told to OnAcquire")
	})
}

// TestRV14_OwedCheckFailingKeepsPlace pins an order defect of the owed
// HealthCheck: the Acquire at the head of the line, handed a resource owed
// its check, ran it off the line; when it failed, the replacement made for
// it went to whoever had queued meanwhile, and the Acquire queued anew
// behind them. A newcomer overtook the longest waiter, which the project's
// FIFO rule forbids (an Acquire that took an idle resource itself was never
// in line, and may queue behind; this one was). Right: the Acquire keeps
// its place at the head, and the replacement is its.
func TestRV14_OwedCheckFailingKeepsPlace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var made, checks atomic.Int32
		var broken atomic.Bool
		newcomer := make(chan struct{})
		p := mustNew(t, Config[int32]{
			New: func(context.Context) (int32, error) { return made.Add(1), nil },
			HealthCheck: func(ctx context.Context, v int32) error {
				if v == 1 && broken.Load() {
					switch checks.Add(1) {
					case 1:
						<-ctx.Done() // the first taker gives up during the check
						return ctx.Err()
					case 2:
						close(newcomer) // a newcomer queues during the owed check
						time.Sleep(time.Second)
					}
					return errors.New("the first resource is broken")
				}
				return nil
			},
			HealthCheckSkip: NoHealthCheckSkip,
			MaxSize:         1,
		})
		t.Cleanup(func() { _ = p.Close(context.Background()) })
		acquireWithin(t, p).Release()
		synctest.Wait()
		broken.Store(true)

		ctx, cancel := context.WithCancel(context.Background())
		checking := make(chan struct{})
		go func() {
			_, _ = p.Acquire(&deadlineHookCtx{Context: ctx, hook: func() { close(checking) }})
		}()
		<-checking
		order := make(chan string, 2)
		take := func(name string) {
			r, err := p.Acquire(context.Background())
			if err != nil {
				order <- name + ": " + err.Error()
				return
			}
			order <- name
			time.Sleep(time.Second)
			r.Release()
		}
		go take("longest waiter")
		synctest.Wait()
		cancel()
		<-newcomer
		go take("newcomer")
		require.Equal(t, "longest waiter", <-order)
		require.Equal(t, "newcomer", <-order)
	})
}

// TestRV14_OwedCheckFailingCloseConfigPanics: when the resource that failed
// the check it owed is closed and Config.Close panics, the panic reaches the
// Acquire that ran the check, and the place it was given again at the head
// of the line is given up: nothing waits there to be lost, and the next
// Acquire is served.
func TestRV14_OwedCheckFailingCloseConfigPanics(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var made, checks atomic.Int32
		var broken atomic.Bool
		p := mustNew(t, Config[int32]{
			New: func(context.Context) (int32, error) { return made.Add(1), nil },
			HealthCheck: func(ctx context.Context, v int32) error {
				if v == 1 && broken.Load() {
					if checks.Add(1) == 1 {
						<-ctx.Done()
						return ctx.Err()
					}
					return errors.New("the first resource is broken")
				}
				return nil
			},
			Close: func(v int32) error {
				if v == 1 {
					panic("Config.Close panics")
				}
				return nil
			},
			HealthCheckSkip: NoHealthCheckSkip,
			MaxSize:         1,
		})
		t.Cleanup(func() { _ = p.Close(context.Background()) })
		acquireWithin(t, p).Release()
		synctest.Wait()
		broken.Store(true)

		ctx, cancel := context.WithCancel(context.Background())
		checking := make(chan struct{})
		go func() {
			_, _ = p.Acquire(&deadlineHookCtx{Context: ctx, hook: func() { close(checking) }})
		}()
		<-checking
		panicked := make(chan any, 1)
		go func() {
			defer func() { panicked <- recover() }()
			r, err := p.Acquire(context.Background())
			if err == nil {
				r.Release()
			}
		}()
		synctest.Wait()
		cancel()
		require.Equal(t, "Config.Close panics", <-panicked)
		synctest.Wait()
		require.Zero(t, p.Stats().Waiting, "%+v", p.Stats())
		acquireWithin(t, p).Release()
		synctest.Wait()
		requireWhole(t, p)
	})
}
