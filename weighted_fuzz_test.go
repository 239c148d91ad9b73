package ctxsync_test

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync"
	"github.com/ctxsync/ctxsync/internal/testutil"
)

// weightedModel is what a Weighted should be: a capacity, the units held, and
// the queue in order.
type weightedModel struct {
	cap, held int64
	resized   bool
	queue     []weightedQueued
}

type weightedQueued struct {
	n int64
	w *modelWaiter
}

func (m *weightedModel) free() int64 { return m.cap - m.held }

// grant admits waiters from the head while the head fits, and no further.
func (m *weightedModel) grant() {
	for len(m.queue) > 0 && m.queue[0].n <= m.free() {
		m.held += m.queue[0].n
		m.remove(0, nil)
	}
}

func (m *weightedModel) remove(i int, err error) {
	m.queue[i].w.settle(err)
	m.queue = append(m.queue[:i], m.queue[i+1:]...)
}

// FuzzWeightedModel checks a Weighted against weightedModel (see
// model_test.go): after each step, every Acquire's outcome, Available, Waiting
// and Capacity. Each step is two bytes: an operation and its argument. Units
// come in multiples of a scale that is 1, or large enough that requests cross
// the sizes the fast path of Acquire treats apart.
func FuzzWeightedModel(f *testing.F) {
	// Acquire more than free, queue behind it, cancel the head, release.
	f.Add(uint8(10), uint8(0), []byte{0, 6, 0, 6, 1, 3, 5, 0, 3, 6, 3, 6})
	// Shrink below what is held with waiters, one too large, then grow.
	f.Add(uint8(10), uint8(1), []byte{0, 8, 0, 6, 1, 1, 4, 4, 3, 5, 4, 15, 2, 3})
	// Zero-unit requests behind a queue and after a shrink; TryAcquire.
	f.Add(uint8(5), uint8(2), []byte{0, 5, 0, 0, 2, 1, 4, 2, 0, 0, 3, 3, 5, 1, 3, 2})
	f.Add(uint8(15), uint8(3), []byte{0, 15, 0, 17, 4, 15, 0, 16, 3, 15, 0, 2, 5, 0, 3, 9})
	// Boundaries, one unit either side: a shrink to exactly a waiter's size
	// keeps it, one below refuses it; a head or a newcomer one unit short
	// waits.
	f.Add(uint8(10), uint8(0), []byte{0, 8, 0, 6, 0, 5, 4, 5, 3, 8})
	f.Add(uint8(10), uint8(0), []byte{0, 8, 0, 4, 3, 1, 3, 1})
	f.Add(uint8(10), uint8(0), []byte{0, 10, 0, 10, 4, 9})
	f.Add(uint8(10), uint8(0), []byte{0, 8, 0, 3, 3, 1})
	// A cancel of the head, then at once TryAcquire: past it (128|0, then
	// 128|2<<2), and, with a live waiter behind it that does not fit, not past
	// that one.
	f.Add(uint8(10), uint8(0), []byte{0, 8, 0, 5, 5, 128 | 2<<2})
	f.Add(uint8(10), uint8(0), []byte{0, 8, 0, 5, 0, 9, 5, 128 | 1<<2})
	f.Add(uint8(10), uint8(0), []byte{0, 6, 0, 5, 0, 2, 5, 128 | 2<<2})
	// At MaxWeightedCapacity: all of it held, a waiter for all of it that a
	// shrink to 0 refuses, everything released (Available back from
	// -MaxWeightedCapacity), and a grow back to the maximum.
	f.Add(uint8(15), uint8(4), []byte{0, 15, 0, 15, 4, 0, 3, 15, 4, 15})
	// Releases of more than held (128|k: by k%16+1 units; 128 alone: by 1),
	// at the maximum with none of it held, all of it held, and after a shrink.
	f.Add(uint8(15), uint8(4), []byte{3, 128, 3, 128 | 15, 0, 15, 3, 128, 3, 128 | 15, 4, 7, 3, 128 | 4, 3, 15, 3, 128})
	f.Fuzz(func(t *testing.T, capB, scaleB uint8, script []byte) {
		// The last scale makes 15 units MaxWeightedCapacity itself (see
		// maxIs15Units), and 16 or 17 units more than any Weighted may hold.
		scale := []int64{1, 1 << 31, 1 << 33, 1 << 50, ctxsync.MaxWeightedCapacity / 15}[scaleB%5]
		for i := 0; i+1 < len(script); i += 2 {
			if script[i]%6 == 5 && script[i+1]&0x80 != 0 {
				// A TryAcquire right after a cancel (below): the waiter's
				// goroutine must not run between the two, or it may hold
				// the lock that TryAcquire's look tries.
				testutil.OneProcessor(t)
				break
			}
		}
		synctest.Test(t, func(t *testing.T) {
			m := &weightedModel{cap: int64(capB%16) * scale}
			w := ctxsync.NewWeighted(m.cap)
			var all []*modelWaiter
			for ; len(script) >= 2; script = script[2:] {
				op, arg := script[0]%6, int64(script[1])
				n := arg % 18 * scale // up to 17 units: past the capacity, at times
				switch op {
				case 0, 1:
					if n > m.cap && !m.resized {
						continue // a panic: TestWeightedMisuse
					}
					mw := startWaiter(t.Context(), fmt.Sprintf("Acquire(%d)", n), func(ctx context.Context) error {
						return w.Acquire(ctx, n)
					})
					all = append(all, mw)
					m.queue = append(m.queue, weightedQueued{n, mw})
					if n > m.cap {
						m.remove(len(m.queue)-1, ctxsync.ErrExceedsCapacity)
					} else if len(m.queue) == 1 {
						m.grant()
					}
				case 2:
					if n > m.cap && !m.resized {
						continue
					}
					want := n <= m.cap && len(m.queue) == 0 && n <= m.free()
					require.Equal(t, want, w.TryAcquire(n), "TryAcquire(%d) with %d of %d held, %d queued", n, m.held, m.cap, len(m.queue))
					if want {
						m.held += n
					}
				case 3:
					if arg&0x80 != 0 {
						// More than held, by 1 to 16 units: up to
						// MaxWeightedCapacity past all of it held, at the
						// largest scale. It panics and changes nothing.
						k := m.held + (arg&0x7f%16+1)*scale
						require.Equal(t, "ctxsync: Weighted.Release of more than held", testutil.PanicOf(func() { w.Release(k) }),
							"Release(%d) with %d of %d held", k, m.held, m.cap)
						break
					}
					k := arg % (m.held/scale + 1) * scale
					w.Release(k)
					m.held -= k
					m.grant()
				case 4:
					c := arg % 16 * scale
					w.Resize(c)
					m.cap, m.resized = c, true
					for i := 0; i < len(m.queue); {
						if m.queue[i].n > c {
							m.remove(i, ctxsync.ErrExceedsCapacity)
						} else {
							i++
						}
					}
					m.grant()
				case 5:
					if len(m.queue) == 0 {
						continue
					}
					i := int(arg) % len(m.queue)
					m.queue[i].w.cancel()
					m.remove(i, context.Canceled)
					m.grant()
					if arg&0x80 == 0 {
						break
					}
					// At once, before the waiter's goroutine runs again: its
					// ctx has ended, so it counts as gone (TryAcquire looks
					// at the queue), and whoever fits behind it is served
					// before TryAcquire, which never overtakes a live one.
					k := (arg & 0x7f) >> 2 % 18 * scale
					if k > m.cap && !m.resized {
						break
					}
					want := k <= m.cap && len(m.queue) == 0 && k <= m.free()
					require.Equal(t, want, w.TryAcquire(k), "TryAcquire(%d) after a cancel, with %d of %d held, %d queued", k, m.held, m.cap, len(m.queue))
					if want {
						m.held += k
					}
				}
				synctest.Wait()

				all = checkWaiters(t, all)
				require.Equal(t, m.free(), w.Available(), "Available with %d of %d held", m.held, m.cap)
				require.Equal(t, len(m.queue), w.Waiting())
				require.Equal(t, m.cap, w.Capacity())
			}
			cancelAll(all)
		})
	})
}

// maxIs15Units fails to compile unless MaxWeightedCapacity is 15 units of
// FuzzWeightedModel's largest scale exactly.
var maxIs15Units = [1]struct{}{}[ctxsync.MaxWeightedCapacity%15]

var _ = maxIs15Units
