package ctxsync_test

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync"
	"github.com/ctxsync/ctxsync/internal/testutil"
)

// flightModelCall is one call as flightModel sees it: its callers still
// waiting, and the fn run for it, which returns when the script says.
type flightModelCall struct {
	id        int
	key       int
	waiters   waitQueue
	abandoned bool // every caller left before fn returned

	release chan struct{}                   // closing it makes fn return id
	ctx     atomic.Pointer[context.Context] // fn's ctx, once fn runs
}

// flightModel is what a Flight should be: the call a Do joins per key, the
// fns still running, forgotten and abandoned ones included.
type flightModel struct {
	calls   map[int]*flightModelCall
	running []*flightModelCall
	nextID  int
}

// flightGot is what a Do returned, as the modelWaiter's item.
type flightGot struct {
	v      int
	shared bool
}

// FuzzFlightModel checks a Flight against flightModel (see model_test.go):
// after each step, every Do's outcome (result, shared, or ctx.Err()), Len,
// and which fns' ctxs have ended. Each step is two bytes: an operation and an
// argument (a key, a running fn, a waiting caller).
func FuzzFlightModel(f *testing.F) {
	// Three callers share a call; one leaves; it returns.
	f.Add([]byte{0, 0, 0, 0, 0, 0, 2, 1, 1, 0})
	// Every caller leaves: the call is cancelled, and a new Do starts another.
	f.Add([]byte{0, 1, 0, 1, 2, 0, 2, 0, 0, 1, 1, 0, 1, 0})
	// Forget, a new call beside the old one, and a done ctx.
	f.Add([]byte{0, 2, 3, 2, 0, 2, 4, 2, 1, 1, 1, 0})
	f.Fuzz(func(t *testing.T, script []byte) {
		synctest.Test(t, func(t *testing.T) {
			var fl ctxsync.Flight[int, int]
			m := flightModel{calls: map[int]*flightModelCall{}}
			var all []*modelWaiter
			for ; len(script) >= 2; script = script[2:] {
				op, arg := script[0]%5, int(script[1])
				switch op {
				case 0: // Do
					key := arg % 3
					c := m.calls[key]
					var fn func(context.Context) (int, error)
					if c == nil {
						m.nextID++
						c = &flightModelCall{id: m.nextID, key: key, release: make(chan struct{})}
						m.calls[key] = c
						m.running = append(m.running, c)
						fn = func(ctx context.Context) (int, error) {
							c.ctx.Store(&ctx)
							<-c.release // ignores ctx: the script decides
							return c.id, nil
						}
					} else {
						fn = func(context.Context) (int, error) { panic("a Do that should join ran its fn") }
					}
					mw := startItemWaiter(t.Context(), fmt.Sprintf("Do(%d)", key), func(ctx context.Context) (any, error) {
						v, err, shared := fl.Do(ctx, key, fn)
						return flightGot{v, shared}, err
					})
					all = append(all, mw)
					c.waiters = append(c.waiters, mw)
				case 1: // fn returns
					if len(m.running) == 0 {
						continue
					}
					i := arg % len(m.running)
					c := m.running[i]
					m.running = slices.Delete(m.running, i, i+1)
					close(c.release)
					if m.calls[c.key] == c {
						delete(m.calls, c.key)
					}
					for _, mw := range c.waiters {
						mw.settle(nil)
						mw.wantItem = flightGot{c.id, len(c.waiters) > 1}
					}
					c.waiters = nil
				case 2: // a waiting caller leaves
					var calls []*flightModelCall
					n := 0
					for _, c := range m.running {
						if len(c.waiters) > 0 {
							calls = append(calls, c)
							n += len(c.waiters)
						}
					}
					if n == 0 {
						continue
					}
					i := arg % n
					for _, c := range calls {
						if i >= len(c.waiters) {
							i -= len(c.waiters)
							continue
						}
						c.waiters.cancel(i)
						if len(c.waiters) == 0 {
							c.abandoned = true
							if m.calls[c.key] == c {
								delete(m.calls, c.key)
							}
						}
						break
					}
				case 3: // Forget
					delete(m.calls, arg%3)
					fl.Forget(arg % 3)
				case 4: // a done ctx fails, and changes nothing
					v, err, shared := fl.Do(testutil.Cancelled(), arg%3, func(context.Context) (int, error) {
						panic("a Do with a done ctx ran its fn")
					})
					require.Equal(t, flightResult{0, context.Canceled, false}, flightResult{v, err, shared})
				}
				synctest.Wait()
				all = checkWaiters(t, all)
				require.Equal(t, len(m.calls), fl.Len(), "Len")
				for _, c := range m.running {
					ctx := c.ctx.Load()
					require.NotNil(t, ctx, "call %d: fn not started", c.id)
					require.Equal(t, c.abandoned, (*ctx).Err() != nil, "call %d: abandoned %v, fn's ctx %v", c.id, c.abandoned, (*ctx).Err())
				}
			}
			cancelAll(all)
			for _, c := range m.running {
				close(c.release)
			}
		})
	})
}
