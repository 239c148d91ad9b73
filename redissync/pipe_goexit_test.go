package redissync

import (
	"context"
	"errors"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// goexitPipeHook is a client hook of the user's that, once armed, calls
// runtime.Goexit once, after a pipeline it wraps has run.
type goexitPipeHook struct{ armed atomic.Bool }

func (h *goexitPipeHook) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (h *goexitPipeHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

func (h *goexitPipeHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		if h.armed.CompareAndSwap(true, false) {
			runtime.Goexit()
		}
		return err
	}
}

// Regression: a client hook that called runtime.Goexit in a pipeline ended
// the pipeline's goroutine without a word to its callers, who waited for
// their Timeout, and then for good in the background, and without giving
// up its place in the pipe: the Keyed lost it for good, and every later
// call queued and failed. Its callers get an error, what their scripts may
// have got is taken back, and the place passes on.
func TestPipelineGoexitLeavesNothing(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			c, h := hookedClient(t, b, true)
			g := &goexitPipeHook{}
			c.AddHook(g)
			k, err := NewKeyedLock(b.config(c, "pipegoexit", 1, time.Minute))
			if err != nil {
				t.Fatal(err)
			}
			bg := context.Background()
			warm(t, k.newSemaphore("warm", ""))

			gate := make(chan struct{})
			h.gate.Store(&gate)
			aDone := make(chan error, 1)
			var pa *Permit
			go func() {
				var err error
				pa, err = k.Acquire(bg, "a")
				aDone <- err
			}()
			<-h.atGate // a's round trip is under way, held
			bDone := make(chan error, 1)
			go func() {
				ctx, cancel := context.WithTimeout(bg, 20*time.Second)
				defer cancel()
				p, err := k.Acquire(ctx, "b")
				if err == nil {
					err = p.Release(bg)
					if err == nil {
						err = errors.New("granted")
					}
				}
				bDone <- err
			}()
			for queued := 0; queued == 0; time.Sleep(time.Millisecond) {
				k.pipe.mu.Lock()
				queued = len(k.pipe.queue)
				k.pipe.mu.Unlock()
			}
			g.armed.Store(true)
			close(gate)
			if err := <-aDone; err != nil {
				t.Fatal(err)
			}
			if err := <-bDone; !errors.Is(err, ErrUnavailable) {
				t.Fatalf("the Acquire whose pipeline ended in a Goexit = %v; want an error matching ErrUnavailable", err)
			}
			if err := pa.Release(bg); err != nil {
				t.Fatal(err)
			}
			awaitKeyedIdle(t, k, "after a Goexit in a pipeline")
			p, err := k.TryAcquire(bg, "b")
			if err != nil {
				t.Fatalf("TryAcquire = %v; the lock is held by nobody", err)
			}
			if err := p.Release(bg); err != nil {
				t.Fatal(err)
			}
		})
	}
}
