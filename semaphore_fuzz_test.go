package ctxsync_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync"
)

// semaphoreModel is what a Semaphore or a BoundedSemaphore should be: the
// free permits, and the queue in order.
type semaphoreModel struct {
	free  int
	queue waitQueue
}

// handOver gives free permits to the oldest waiters.
func (m *semaphoreModel) handOver() {
	for m.free > 0 && len(m.queue) > 0 {
		m.free--
		m.queue.settle(0, nil)
	}
}

// semaphore is what Semaphore and BoundedSemaphore share.
type semaphore interface {
	Acquire(ctx context.Context) error
	TryAcquire() bool
	Release()
	Available() int
	Waiting() int
}

// FuzzSemaphoreModel checks a Semaphore and a BoundedSemaphore against
// semaphoreModel (see model_test.go): after each step, every Acquire's
// outcome, Available and Waiting. Each step is two bytes: an operation and,
// for a cancellation, which waiter, and from 128 up a Release made at once
// after it, before the waiter has run again.
func FuzzSemaphoreModel(f *testing.F) {
	// Waiters served in order as permits come back; the head gives up.
	f.Add(uint8(1), []byte{0, 0, 0, 0, 0, 0, 3, 0, 2, 0, 1, 0, 2, 0, 2, 0, 2, 0})
	// TryAcquire never overtakes; a waiter in the middle gives up; releases
	// past the initial count (a panic for the bounded one).
	f.Add(uint8(0), []byte{0, 0, 0, 0, 0, 0, 3, 1, 1, 0, 2, 0, 2, 0, 2, 0, 2, 0, 1, 0})
	f.Add(uint8(3), []byte{1, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 2, 0, 2, 0, 3, 0, 2, 0, 2, 0})
	// The only waiter gives up, and a Release follows at once; then the
	// head of three does.
	f.Add(uint8(0), []byte{0, 0, 3, 128, 1, 0, 0, 0, 0, 0, 0, 0, 3, 129, 2, 0})
	f.Fuzz(func(t *testing.T, permits uint8, script []byte) {
		for _, bounded := range []bool{false, true} {
			synctest.Test(t, func(t *testing.T) {
				initial := int(permits % 4)
				m := semaphoreModel{free: initial}
				var s semaphore = ctxsync.NewSemaphore(initial)
				if bounded {
					s = ctxsync.NewBoundedSemaphore(initial)
				}
				var all []*modelWaiter
				for script := script; len(script) >= 2; script = script[2:] {
					switch op, arg := script[0]%4, int(script[1]); op {
					case 0:
						mw := startWaiter(t.Context(), "Acquire", s.Acquire)
						all = append(all, mw)
						m.queue = append(m.queue, mw)
						m.handOver()
					case 1:
						want := m.free > 0 && len(m.queue) == 0
						require.Equal(t, want, s.TryAcquire(), "TryAcquire, %d free, %d queued", m.free, len(m.queue))
						if want {
							m.free--
						}
					case 2:
						if bounded && m.free == initial {
							// Nobody holds a permit: with an initial count
							// of 0, nobody ever does, queued or not.
							requireReleasedTooManyTimes(t, s.Release)
							continue
						}
						s.Release()
						m.free++
						m.handOver()
					case 3:
						if !m.queue.cancel(arg) {
							continue
						}
						if arg >= 128 && !(bounded && m.free == initial) {
							// A Release at once, before the waiter that gave
							// up has run again: what it frees is free, or
							// granted, as soon as the Release returns.
							s.Release()
							m.free++
							m.handOver()
							require.Equal(t, m.free, s.Available(), "Available right after a Release past a waiter that gave up")
						}
					}
					synctest.Wait()
					all = checkWaiters(t, all)
					require.Equal(t, m.free, s.Available())
					require.Equal(t, len(m.queue), s.Waiting())
				}
				cancelAll(all)
			})
		}
	})
}

func requireReleasedTooManyTimes(t *testing.T, release func()) {
	t.Helper()
	defer func() {
		err, _ := recover().(error)
		require.True(t, errors.Is(err, ctxsync.ErrReleasedTooManyTimes), "Release past the initial count: recovered %v", err)
	}()
	release()
}
