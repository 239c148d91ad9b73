package ctxsync_test

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync"
)

// queueModel is what a Queue should be: its items, whether it is closed, the
// producers and consumers waiting in order, and the items put and not yet
// marked done.
type queueModel struct {
	capacity   int
	items      []int
	closed     bool
	getters    []*modelWaiter
	putters    []queuedPut
	joiners    []*modelWaiter
	unfinished int
}

type queuedPut struct {
	v int
	w *modelWaiter
}

func (m *queueModel) room() bool { return m.capacity == 0 || len(m.items) < m.capacity }

// accept takes v in: to the oldest consumer waiting, or at the back.
func (m *queueModel) accept(v int) {
	m.unfinished++
	if len(m.getters) > 0 {
		m.getters[0].settle(nil)
		m.getters[0].wantItem = v
		m.getters = m.getters[1:]
		return
	}
	m.items = append(m.items, v)
}

// take removes the front item, and lets the oldest producers in while there is
// room.
func (m *queueModel) take() int {
	v := m.items[0]
	m.items = m.items[1:]
	for len(m.putters) > 0 && m.room() {
		p := m.putters[0]
		m.putters = m.putters[1:]
		p.w.settle(nil)
		m.accept(p.v)
	}
	return v
}

// waiting returns every call that waits, for the script to pick one to cancel.
func (m *queueModel) waiting() []*modelWaiter {
	var all []*modelWaiter
	all = append(all, m.getters...)
	for _, p := range m.putters {
		all = append(all, p.w)
	}
	return append(all, m.joiners...)
}

// cancel ends a waiting call: it returns ctx.Err(), and the queue is as if it
// had never come.
func (m *queueModel) cancel(mw *modelWaiter) {
	mw.cancel()
	mw.settle(context.Canceled)
	drop := func(ws []*modelWaiter) []*modelWaiter {
		for i, w := range ws {
			if w == mw {
				return append(ws[:i], ws[i+1:]...)
			}
		}
		return ws
	}
	m.getters = drop(m.getters)
	m.joiners = drop(m.joiners)
	for i, p := range m.putters {
		if p.w == mw {
			m.putters = append(m.putters[:i], m.putters[i+1:]...)
			break
		}
	}
}

// FuzzQueueModel checks a Queue against queueModel (see model_test.go): after
// each step, every Put's, Get's (and its item's) and Join's outcome, and Len.
// Each step is two bytes: an operation and, for a cancellation, which call.
// Items are numbered in the order the script puts them.
func FuzzQueueModel(f *testing.F) {
	// Capacity 1: producers wait for room, consumers for items; Join waits for
	// TaskDone.
	f.Add(uint8(1), []byte{0, 0, 0, 0, 0, 0, 6, 0, 2, 0, 2, 0, 5, 0, 5, 0, 2, 0, 5, 0})
	// Consumers first; a consumer in the middle gives up; Close releases
	// both sides and Get drains the rest.
	f.Add(uint8(2), []byte{2, 0, 2, 0, 2, 0, 7, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 4, 0, 2, 0, 2, 0, 2, 0})
	// TryPut and TryGet never overtake; TaskDone once too often panics.
	f.Add(uint8(1), []byte{1, 0, 1, 0, 0, 0, 3, 0, 3, 0, 3, 0, 5, 0, 5, 0, 5, 0})
	// Unbounded; a producer that gives up; Join cancelled.
	f.Add(uint8(0), []byte{1, 0, 0, 0, 6, 0, 7, 0, 3, 0, 5, 0, 2, 0, 5, 0})
	f.Add(uint8(2), []byte{0, 0, 0, 0, 0, 0, 0, 0, 7, 0, 7, 0, 3, 0, 3, 0, 3, 0})
	f.Fuzz(func(t *testing.T, capB uint8, script []byte) {
		synctest.Test(t, func(t *testing.T) {
			m := &queueModel{capacity: int(capB % 4)}
			q := ctxsync.NewQueue[int](m.capacity)
			next := 0
			var all []*modelWaiter
			for ; len(script) >= 2; script = script[2:] {
				switch op, arg := script[0]%8, int(script[1]); op {
				case 0:
					v := next
					next++
					mw := startWaiter(t.Context(), fmt.Sprintf("Put(%d)", v), func(ctx context.Context) error {
						return q.Put(ctx, v)
					})
					all = append(all, mw)
					switch {
					case m.closed:
						mw.settle(ctxsync.ErrClosed)
					case len(m.putters) == 0 && m.room():
						mw.settle(nil)
						m.accept(v)
					default:
						m.putters = append(m.putters, queuedPut{v, mw})
					}
				case 1:
					v := next
					next++
					want := !m.closed && len(m.putters) == 0 && m.room()
					require.Equal(t, want, q.TryPut(v), "TryPut(%d) with %d items, %d putters, closed %v", v, len(m.items), len(m.putters), m.closed)
					if want {
						m.accept(v)
					}
				case 2:
					mw := startItemWaiter(t.Context(), "Get", func(ctx context.Context) (any, error) {
						return q.Get(ctx)
					})
					all = append(all, mw)
					switch {
					case len(m.getters) == 0 && len(m.items) > 0:
						mw.settle(nil)
						mw.wantItem = m.take()
					case m.closed:
						mw.settle(ctxsync.ErrClosed)
					default:
						m.getters = append(m.getters, mw)
					}
				case 3:
					v, ok := q.TryGet()
					want := len(m.getters) == 0 && len(m.items) > 0
					require.Equal(t, want, ok, "TryGet with %d items", len(m.items))
					if want {
						require.Equal(t, m.take(), v, "TryGet")
					}
				case 4:
					q.Close()
					if !m.closed {
						m.closed = true
						for _, p := range m.putters {
							p.w.settle(ctxsync.ErrClosed)
						}
						for _, g := range m.getters {
							g.settle(ctxsync.ErrClosed)
						}
						m.putters, m.getters = nil, nil
					}
				case 5:
					if m.unfinished == 0 {
						require.PanicsWithValue(t, "ctxsync: Queue.TaskDone called more times than items were put", q.TaskDone)
						continue
					}
					q.TaskDone()
					if m.unfinished--; m.unfinished == 0 {
						for _, j := range m.joiners {
							j.settle(nil)
						}
						m.joiners = nil
					}
				case 6:
					mw := startWaiter(t.Context(), "Join", q.Join)
					all = append(all, mw)
					if m.unfinished == 0 {
						mw.settle(nil)
					} else {
						m.joiners = append(m.joiners, mw)
					}
				case 7:
					if w := m.waiting(); len(w) > 0 {
						m.cancel(w[arg%len(w)])
					}
				}
				synctest.Wait()
				all = checkWaiters(t, all)
				require.Equal(t, len(m.items), q.Len())
			}
			cancelAll(all)
		})
	})
}
