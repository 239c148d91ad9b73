package ctxsync_test

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync"
)

// weightedModel is what a Weighted should be, kept the plain way: a capacity,
// the units held, and the queue in order.
type weightedModel struct {
	cap, held int64
	resized   bool
	queue     []*modelWaiter
}

// A modelWaiter is one Acquire run in a goroutine, and the result the model
// expects of it once it has one.
type modelWaiter struct {
	n      int64
	cancel context.CancelFunc
	res    chan error

	settled bool  // the model says it has returned
	want    error // what it returned
}

func (m *weightedModel) free() int64 { return m.cap - m.held }

// grant admits waiters from the head while the head fits, and no further.
func (m *weightedModel) grant() {
	for len(m.queue) > 0 && m.queue[0].n <= m.free() {
		m.held += m.queue[0].n
		m.settle(0, nil)
	}
}

func (m *weightedModel) settle(i int, err error) {
	m.queue[i].settled, m.queue[i].want = true, err
	m.queue = append(m.queue[:i], m.queue[i+1:]...)
}

// FuzzWeighted runs a script of operations on a Weighted in a synctest bubble,
// one at a time, each followed by synctest.Wait, and after each checks every
// Acquire's outcome (or that it still waits), Available, Waiting and Capacity
// against the model. Each step is two bytes: an operation and its argument.
// Units come in multiples of a scale that is 1, or large enough that requests
// cross the sizes the fast path of Acquire treats apart.
func FuzzWeighted(f *testing.F) {
	// Acquire more than free, queue behind it, cancel the head, release.
	f.Add(uint8(10), uint8(0), []byte{0, 6, 0, 6, 1, 3, 5, 0, 3, 6, 3, 6})
	// Shrink below what is held with waiters, one too large, then grow.
	f.Add(uint8(10), uint8(1), []byte{0, 8, 0, 6, 1, 1, 4, 4, 3, 5, 4, 15, 2, 3})
	// Zero-unit requests behind a queue and after a shrink; TryAcquire.
	f.Add(uint8(5), uint8(2), []byte{0, 5, 0, 0, 2, 1, 4, 2, 0, 0, 3, 3, 5, 1, 3, 2})
	f.Add(uint8(15), uint8(3), []byte{0, 15, 0, 17, 4, 15, 0, 16, 3, 15, 0, 2, 5, 0, 3, 9})
	// Boundaries, one unit either side: a shrink to exactly a waiter's size
	// keeps it, one below refuses it; a head one unit short stays queued.
	f.Add(uint8(10), uint8(0), []byte{0, 8, 0, 6, 0, 5, 4, 5, 3, 8})
	f.Add(uint8(10), uint8(0), []byte{0, 8, 0, 4, 3, 1, 3, 1})
	f.Add(uint8(10), uint8(0), []byte{0, 10, 0, 10, 4, 9})
	f.Add(uint8(10), uint8(0), []byte{0, 8, 0, 3, 3, 1}) // a newcomer one unit short queues
	f.Fuzz(func(t *testing.T, capB, scaleB uint8, script []byte) {
		scale := []int64{1, 1 << 31, 1 << 33, 1 << 50}[scaleB%4]
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
					ctx, cancel := context.WithCancel(t.Context())
					mw := &modelWaiter{n: n, cancel: cancel, res: make(chan error, 1)}
					all = append(all, mw)
					go func() { mw.res <- w.Acquire(ctx, n) }()
					m.queue = append(m.queue, mw)
					if n > m.cap {
						m.settle(len(m.queue)-1, ctxsync.ErrExceedsCapacity)
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
							m.settle(i, ctxsync.ErrExceedsCapacity)
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
					m.queue[i].cancel()
					m.settle(i, context.Canceled)
					m.grant()
				}
				synctest.Wait()

				for _, mw := range all {
					if !mw.settled {
						require.Empty(t, mw.res, "Acquire(%d) returned while the model has it queued", mw.n)
						continue
					}
					if mw.res != nil {
						require.NotEmpty(t, mw.res, "Acquire(%d) still waits; the model says %v", mw.n, mw.want)
						require.Equal(t, mw.want, <-mw.res, "Acquire(%d)", mw.n)
						mw.res = nil
					}
				}
				require.Equal(t, m.free(), w.Available(), "Available with %d of %d held", m.held, m.cap)
				require.Equal(t, len(m.queue), w.Waiting())
				require.Equal(t, m.cap, w.Capacity())
			}
			for _, mw := range m.queue {
				mw.cancel()
			}
		})
	})
}
