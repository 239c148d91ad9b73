package ctxsync_test

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync"
)

// rwModel is what an RWLock should be: how many readers hold it, whether a
// writer does, and the queue in order.
type rwModel struct {
	readers int
	writer  bool
	queue   []rwQueued
}

type rwQueued struct {
	writer bool
	w      *modelWaiter
}

// dispatch lets in the head of the queue while it may enter: every reader up
// to the first writer if no writer holds the lock, then that writer once the
// lock is free.
func (m *rwModel) dispatch() {
	for len(m.queue) > 0 && !m.writer {
		if m.queue[0].writer {
			if m.readers > 0 {
				return
			}
			m.writer = true
		} else {
			m.readers++
		}
		m.remove(0, nil)
	}
}

func (m *rwModel) remove(i int, err error) {
	m.queue[i].w.settle(err)
	m.queue = append(m.queue[:i], m.queue[i+1:]...)
}

// A pausedCall is an RLock or a Lock paused in its first look at ctx (see
// pauseCtx): the script runs operations between that look and what the call
// does next.
type pausedCall struct {
	writer bool
	mw     *modelWaiter
	resume chan struct{}

	free     bool // at the look, no writer held the lock and nobody queued
	released bool // a writer has unlocked since the look
}

// pauseCtx is a ctx whose first Err reads the error, then waits for resume
// before it returns it: the call looked at a live ctx, and whatever the
// script does meanwhile, the ending of that ctx included, comes after.
type pauseCtx struct {
	context.Context
	resume <-chan struct{}
	looked bool
}

func (c *pauseCtx) Err() error {
	err := c.Context.Err()
	if !c.looked {
		c.looked = true
		<-c.resume
	}
	return err
}

// FuzzRWLockModel checks an RWLock against rwModel (see model_test.go): after
// each step, every RLock's and Lock's outcome. Each step is two bytes: an
// operation and, for a cancellation, which waiter; for a paused call, whether
// it locks for writing, and at its resumption whether its ctx ends first.
func FuzzRWLockModel(f *testing.F) {
	// A writer waits for the readers; readers behind it wait for it.
	f.Add([]byte{0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 4, 0, 4, 0, 5, 0})
	// The writer gives up: the readers behind it enter.
	f.Add([]byte{0, 0, 1, 0, 0, 0, 0, 0, 6, 0, 4, 0})
	// Readers queued before the next writer enter together at Unlock.
	f.Add([]byte{1, 0, 0, 0, 0, 0, 1, 0, 0, 0, 5, 0, 4, 0, 4, 0, 5, 0, 4, 0})
	// TryLock and TryRLock never overtake; misuse panics and changes nothing.
	f.Add([]byte{4, 0, 5, 0, 2, 0, 3, 0, 1, 0, 2, 0, 3, 0, 4, 0, 3, 0, 5, 0})
	// A reader in the middle gives up; the head gives up.
	f.Add([]byte{1, 0, 0, 0, 1, 0, 0, 0, 6, 1, 6, 0, 5, 0, 5, 0})
	// A writer in and out while a reader looks, its ctx ended meanwhile.
	f.Add([]byte{7, 0, 3, 0, 5, 0, 8, 1})
	// The same with a queued reader handed the lock between.
	f.Add([]byte{7, 0, 3, 0, 0, 0, 5, 0, 4, 0, 8, 1})
	// A writer queues and gives up while a reader looks.
	f.Add([]byte{2, 0, 7, 0, 1, 0, 6, 0, 8, 1})
	// A reader looks at a held lock, which is freed before it queues.
	f.Add([]byte{3, 0, 7, 0, 5, 0, 8, 0})
	// A writer looks; a reader comes and goes.
	f.Add([]byte{7, 1, 2, 0, 4, 0, 8, 1})
	f.Fuzz(func(t *testing.T, script []byte) {
		synctest.Test(t, func(t *testing.T) {
			var m rwModel
			var rw ctxsync.RWLock
			var all []*modelWaiter
			var paused *pausedCall
			enqueue := func(writer bool, mw *modelWaiter) {
				m.queue = append(m.queue, rwQueued{writer, mw})
				if len(m.queue) == 1 {
					m.dispatch()
				}
			}
			for ; len(script) >= 2; script = script[2:] {
				switch op, arg := script[0]%9, int(script[1]); op {
				case 0, 1:
					writer, name, lock := op == 1, "RLock", rw.RLock
					if writer {
						name, lock = "Lock", rw.Lock
					}
					mw := startWaiter(t.Context(), name, lock)
					all = append(all, mw)
					enqueue(writer, mw)
				case 2:
					want := len(m.queue) == 0 && !m.writer
					require.Equal(t, want, rw.TryRLock(), "TryRLock with %d readers, writer %v, %d queued", m.readers, m.writer, len(m.queue))
					if want {
						m.readers++
					}
				case 3:
					want := len(m.queue) == 0 && !m.writer && m.readers == 0
					require.Equal(t, want, rw.TryLock(), "TryLock with %d readers, writer %v, %d queued", m.readers, m.writer, len(m.queue))
					m.writer = m.writer || want
				case 4:
					if m.readers == 0 {
						require.PanicsWithValue(t, "ctxsync: RUnlock of RWLock not locked for reading", rw.RUnlock)
						continue
					}
					rw.RUnlock()
					m.readers--
					m.dispatch()
				case 5:
					if !m.writer {
						require.PanicsWithValue(t, "ctxsync: Unlock of RWLock not locked for writing", rw.Unlock)
						continue
					}
					rw.Unlock()
					m.writer = false
					if paused != nil {
						paused.released = true
					}
					m.dispatch()
				case 6:
					if len(m.queue) == 0 {
						continue
					}
					i := arg % len(m.queue)
					m.queue[i].w.cancel()
					m.remove(i, context.Canceled)
					m.dispatch()
				case 7:
					if paused != nil {
						continue
					}
					p := &pausedCall{writer: arg&1 != 0, resume: make(chan struct{})}
					p.free = !m.writer && len(m.queue) == 0
					name, lock := "RLock paused in its look", rw.RLock
					if p.writer {
						name, lock = "Lock paused in its look", rw.Lock
					}
					p.mw = startWaiter(t.Context(), name, func(ctx context.Context) error {
						return lock(&pauseCtx{Context: ctx, resume: p.resume})
					})
					all = append(all, p.mw)
					paused = p
				case 8:
					if paused == nil {
						continue
					}
					p, ended := paused, arg&1 != 0
					paused = nil
					if ended {
						p.mw.cancel()
					}
					close(p.resume)
					freeNow := !m.writer && len(m.queue) == 0
					switch {
					case !ended:
						// Live: as a call made now.
						enqueue(p.writer, p.mw)
					case !p.writer && p.free && freeNow && !p.released:
						// The lock was free for the reader from before
						// its look until now: it may count as taken at
						// the look, when ctx was live.
						m.readers++
						p.mw.settle(nil)
					default:
						// Nothing to take, or a lock freed after ctx
						// ended, which the caller must not get.
						p.mw.settle(context.Canceled)
					}
				}
				synctest.Wait()
				all = checkWaiters(t, all)
			}
			if paused != nil {
				close(paused.resume)
			}
			cancelAll(all)
		})
	})
}
