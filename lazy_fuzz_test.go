package ctxsync_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync"
	"github.com/ctxsync/ctxsync/internal/testutil"
)

// lazyModelRun is one run of init as lazyModel sees it.
type lazyModelRun struct {
	id        int
	waiters   waitQueue
	abandoned bool

	fail    chan bool // init returns an error if it receives true, its id if false
	ctx     atomic.Pointer[context.Context]
	started atomic.Bool
}

var errLazyModel = errors.New("init failed")

// FuzzLazyModel checks a Lazy against a plain model: the value kept, the run
// a Get joins, the runs of init still going (those every Get left included).
// After each step it checks every Get's outcome, Peek, and which runs' ctxs
// have ended. Each step is two bytes: an operation and an argument.
func FuzzLazyModel(f *testing.F) {
	// Two Gets share a run that fails; the next run succeeds; later Gets get it.
	f.Add([]byte{0, 0, 0, 0, 1, 1, 0, 0, 1, 0, 0, 0, 3, 0})
	// Every Get leaves; a new run starts; the left run succeeds first.
	f.Add([]byte{0, 0, 2, 0, 0, 0, 1, 0, 1, 0, 3, 0, 4, 0})
	f.Fuzz(func(t *testing.T, script []byte) {
		synctest.Test(t, func(t *testing.T) {
			var (
				mu     sync.Mutex
				runs   []*lazyModelRun // in the order init is called
				called int
			)
			l := ctxsync.NewLazy(func(ctx context.Context) (int, error) {
				mu.Lock()
				r := runs[called]
				called++
				mu.Unlock()
				r.ctx.Store(&ctx)
				r.started.Store(true)
				if <-r.fail {
					return 0, errLazyModel
				}
				return r.id, nil
			})
			var (
				made    bool
				val     int
				current *lazyModelRun
				running []*lazyModelRun
				all     []*modelWaiter
			)
			for ; len(script) >= 2; script = script[2:] {
				op, arg := script[0]%5, int(script[1])
				switch op {
				case 0: // Get
					// The model first: the run a new Get starts must be in
					// runs before init can look for it.
					var joins *lazyModelRun
					if !made {
						if current == nil {
							current = &lazyModelRun{id: len(runs) + 1, fail: make(chan bool, 1)}
							mu.Lock()
							runs = append(runs, current)
							mu.Unlock()
							running = append(running, current)
						}
						joins = current
					}
					mw := startItemWaiter(t.Context(), "Get", func(ctx context.Context) (any, error) {
						v, err := l.Get(ctx)
						return v, err
					})
					all = append(all, mw)
					if joins == nil {
						mw.settle(nil)
						mw.wantItem = val
					} else {
						joins.waiters = append(joins.waiters, mw)
					}
				case 1: // a run of init returns: fails if arg is odd
					if len(running) == 0 {
						continue
					}
					i := arg / 2 % len(running)
					r := running[i]
					running = slices.Delete(running, i, i+1)
					if current == r {
						current = nil
					}
					fail := arg%2 == 1
					r.fail <- fail
					if !fail && !made {
						made, val = true, r.id
					}
					for _, mw := range r.waiters {
						if fail {
							mw.settle(errLazyModel)
						} else {
							mw.settle(nil)
							mw.wantItem = val
						}
					}
					r.waiters = nil
				case 2: // a waiting Get leaves
					var rs []*lazyModelRun
					n := 0
					for _, r := range running {
						if len(r.waiters) > 0 {
							rs = append(rs, r)
							n += len(r.waiters)
						}
					}
					if n == 0 {
						continue
					}
					i := arg % n
					for _, r := range rs {
						if i >= len(r.waiters) {
							i -= len(r.waiters)
							continue
						}
						r.waiters.cancel(i)
						if len(r.waiters) == 0 {
							r.abandoned = true
							if current == r {
								current = nil
							}
						}
						break
					}
				case 3: // Peek
					v, ok := l.Peek()
					require.Equal(t, made, ok, "Peek")
					if made {
						require.Equal(t, val, v, "Peek")
					}
				case 4: // a done ctx fails, made or not
					_, err := l.Get(testutil.Cancelled())
					require.Equal(t, context.Canceled, err)
				}
				synctest.Wait()
				all = checkWaiters(t, all)
				for _, r := range running {
					require.True(t, r.started.Load(), "run %d: init not called", r.id)
					require.Equal(t, r.abandoned, (*r.ctx.Load()).Err() != nil, "run %d: abandoned %v", r.id, r.abandoned)
				}
			}
			cancelAll(all)
			for _, r := range running {
				r.fail <- true
			}
		})
	})
}
