package ctxsync_test

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync"
)

// queueModel is what a Queue or a PriorityQueue should be: its items, whether
// it is closed, the producers and consumers waiting in order, and its task
// accounting.
type queueModel struct {
	capacity   int
	byPriority bool // a PriorityQueue: the lowest priority first, then the oldest
	items      []queuedItem
	closed     bool
	getters    []*modelWaiter
	putters    []queuedPut
	joiners    []*modelWaiter
	unfinished int // items put, less TaskDone calls and items CloseNow handed back
	owed       int // items taken by consumers and not yet marked with TaskDone
}

// A queuedItem is an item and its priority. Items are numbered in the order
// they are put, so among equal priorities the lowest number is the oldest.
type queuedItem struct{ priority, v int }

type queuedPut struct {
	queuedItem
	w *modelWaiter
}

func (m *queueModel) room() bool { return m.capacity == 0 || len(m.items) < m.capacity }

// accept takes an item in: to the oldest consumer waiting, or into the queue.
func (m *queueModel) accept(it queuedItem) {
	m.unfinished++
	if len(m.getters) > 0 {
		m.owed++
		m.getters[0].settle(nil)
		m.getters[0].wantItem = it.v
		m.getters = m.getters[1:]
		return
	}
	m.items = append(m.items, it)
}

// take removes the next item, and lets the oldest producers in while there
// is room. The caller counts it as owed a TaskDone if a consumer took it.
func (m *queueModel) take() int {
	next := 0
	if m.byPriority {
		for i, it := range m.items {
			if it.priority < m.items[next].priority { // ties: the older, earlier
				next = i
			}
		}
	}
	v := m.items[next].v
	m.items = append(m.items[:next], m.items[next+1:]...)
	for len(m.putters) > 0 && m.room() {
		p := m.putters[0]
		m.putters = m.putters[1:]
		p.w.settle(nil)
		m.accept(p.queuedItem)
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

// queueUnderTest is a Queue[int] or a PriorityQueue[int] seen by the fuzz
// targets. A Queue ignores priorities.
type queueUnderTest struct {
	put      func(ctx context.Context, priority, v int) error
	tryPut   func(priority, v int) bool
	get      func(ctx context.Context) (int, error)
	tryGet   func() (int, bool)
	close    func()
	closeNow func() []int
	len      func() int
	taskDone func()
	doneMsg  string // taskDone's panic when called once too often
	join     func(ctx context.Context) error
	unfinish func() int
}

// FuzzQueueModel checks a Queue against queueModel (see model_test.go): after
// each step, every Put's, Get's (and its item's) and Join's outcome, and Len.
// Each step is two bytes: an operation and its argument (which call to
// cancel; for FuzzPriorityQueueModel, the priority of a Put).
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
	// CloseNow with an item taken, producers waiting and a Join: the rest
	// comes out and counts as done; TaskDone for the one taken ends the Join.
	f.Add(uint8(2), []byte{0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 6, 0, 4, 1, 2, 0, 5, 0, 5, 0})
	// CloseNow on an empty queue releases the consumers.
	f.Add(uint8(0), []byte{2, 0, 2, 0, 6, 0, 4, 1, 4, 1, 0, 0})
	// TaskDone for an item still queued panics, so CloseNow cannot count it
	// done twice: Unfinished stays at 0, not -1, and Join returns.
	f.Add(uint8(0), []byte{0, 0, 0, 0, 2, 0, 5, 0, 5, 0, 4, 1, 6, 0, 5, 0})
	// A Join waits through the CloseNow for the item taken; TaskDone ends it.
	f.Add(uint8(1), []byte{0, 0, 0, 0, 2, 0, 6, 0, 5, 0, 4, 1, 5, 0, 5, 0, 6, 0})
	f.Fuzz(func(t *testing.T, capB uint8, script []byte) {
		synctest.Test(t, func(t *testing.T) {
			q := ctxsync.NewQueue[int](int(capB % 4))
			fuzzQueue(t, &queueModel{capacity: int(capB % 4)}, queueUnderTest{
				put:      func(ctx context.Context, _, v int) error { return q.Put(ctx, v) },
				tryPut:   func(_, v int) bool { return q.TryPut(v) },
				get:      q.Get,
				tryGet:   q.TryGet,
				close:    q.Close,
				closeNow: q.CloseNow,
				len:      q.Len,
				taskDone: q.TaskDone,
				doneMsg:  "ctxsync: Queue.TaskDone called more times than items were taken",
				join:     q.Join,
				unfinish: q.Unfinished,
			}, script)
		})
	})
}

// FuzzPriorityQueueModel is FuzzQueueModel for a PriorityQueue, with Puts at
// priorities 0 to 3.
func FuzzPriorityQueueModel(f *testing.F) {
	// Out in priority order, the oldest first among equals.
	f.Add(uint8(0), []byte{1, 2, 1, 0, 1, 2, 1, 1, 1, 0, 3, 0, 3, 0, 3, 0, 3, 0, 3, 0})
	// Producers waiting for room; consumers waiting for items; Close drains
	// in priority order.
	f.Add(uint8(2), []byte{0, 3, 0, 1, 0, 0, 0, 2, 2, 0, 4, 0, 2, 0, 2, 0, 2, 0, 2, 0})
	f.Add(uint8(1), []byte{2, 0, 2, 0, 7, 0, 0, 3, 0, 1, 0, 2, 7, 1, 3, 0, 3, 0, 0, 0})
	// Task accounting and CloseNow in priority order.
	f.Add(uint8(0), []byte{1, 3, 1, 1, 1, 2, 1, 0, 3, 0, 6, 0, 4, 1, 5, 0, 5, 0, 6, 0})
	// TaskDone past the items taken panics; CloseNow counts each item done
	// once.
	f.Add(uint8(0), []byte{0, 1, 0, 0, 3, 0, 5, 0, 5, 0, 4, 1, 6, 0, 5, 0})
	f.Fuzz(func(t *testing.T, capB uint8, script []byte) {
		synctest.Test(t, func(t *testing.T) {
			q := ctxsync.NewPriorityQueue[int](int(capB % 4))
			fuzzQueue(t, &queueModel{capacity: int(capB % 4), byPriority: true}, queueUnderTest{
				put:      q.Put,
				tryPut:   q.TryPut,
				get:      q.Get,
				tryGet:   q.TryGet,
				close:    q.Close,
				closeNow: q.CloseNow,
				len:      q.Len,
				taskDone: q.TaskDone,
				doneMsg:  "ctxsync: PriorityQueue.TaskDone called more times than items were taken",
				join:     q.Join,
				unfinish: q.Unfinished,
			}, script)
		})
	})
}

func fuzzQueue(t *testing.T, m *queueModel, q queueUnderTest, script []byte) {
	next := 0
	var all []*modelWaiter
	for ; len(script) >= 2; script = script[2:] {
		op, arg := script[0]%8, int(script[1])
		it := queuedItem{priority: arg % 4, v: next}
		switch op {
		case 0:
			next++
			mw := startWaiter(t.Context(), fmt.Sprintf("Put(%d, %d)", it.priority, it.v), func(ctx context.Context) error {
				return q.put(ctx, it.priority, it.v)
			})
			all = append(all, mw)
			switch {
			case m.closed:
				mw.settle(ctxsync.ErrClosed)
			case len(m.putters) == 0 && m.room():
				mw.settle(nil)
				m.accept(it)
			default:
				m.putters = append(m.putters, queuedPut{it, mw})
			}
		case 1:
			next++
			want := !m.closed && len(m.putters) == 0 && m.room()
			require.Equal(t, want, q.tryPut(it.priority, it.v), "TryPut(%d, %d) with %d items, %d putters, closed %v",
				it.priority, it.v, len(m.items), len(m.putters), m.closed)
			if want {
				m.accept(it)
			}
		case 2:
			mw := startItemWaiter(t.Context(), "Get", func(ctx context.Context) (any, error) {
				return q.get(ctx)
			})
			all = append(all, mw)
			switch {
			case len(m.getters) == 0 && len(m.items) > 0:
				mw.settle(nil)
				mw.wantItem = m.take()
				m.owed++
			case m.closed:
				mw.settle(ctxsync.ErrClosed)
			default:
				m.getters = append(m.getters, mw)
			}
		case 3:
			v, ok := q.tryGet()
			want := len(m.getters) == 0 && len(m.items) > 0
			require.Equal(t, want, ok, "TryGet with %d items", len(m.items))
			if want {
				require.Equal(t, m.take(), v, "TryGet")
				m.owed++
			}
		case 4:
			if arg%2 == 1 { // CloseNow: what is left comes out, and counts as done
				got := q.closeNow()
				if !m.closed {
					m.closed = true
					for _, p := range m.putters {
						p.w.settle(ctxsync.ErrClosed)
					}
					m.putters = nil
				}
				var want []int
				for len(m.items) > 0 {
					want = append(want, m.take())
				}
				require.Equal(t, want, got, "CloseNow")
				for _, g := range m.getters {
					g.settle(ctxsync.ErrClosed)
				}
				m.getters = nil
				if len(want) > 0 {
					if m.unfinished -= len(want); m.unfinished == 0 {
						for _, j := range m.joiners {
							j.settle(nil)
						}
						m.joiners = nil
					}
				}
				break
			}
			q.close()
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
			if m.owed == 0 {
				// Past the items taken, whatever is still queued: the
				// panic changes nothing (checked below).
				require.PanicsWithValue(t, q.doneMsg, q.taskDone, "TaskDone with %d unfinished, none owed", m.unfinished)
				break
			}
			q.taskDone()
			m.owed--
			if m.unfinished--; m.unfinished == 0 {
				for _, j := range m.joiners {
					j.settle(nil)
				}
				m.joiners = nil
			}
		case 6:
			mw := startWaiter(t.Context(), "Join", q.join)
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
		require.Equal(t, len(m.items), q.len())
		require.Equal(t, m.unfinished, q.unfinish(), "Unfinished")
		require.GreaterOrEqual(t, m.unfinished, m.owed, "model: owed items are unfinished")
	}
	cancelAll(all)
}
