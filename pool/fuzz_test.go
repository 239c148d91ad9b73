package pool

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"
)

// poolModel is what a Pool of MaxSize resources (no health checks, lifetimes
// or MinIdle) should be between steps, once its goroutines are idle: the idle
// values, warmest last, the values out, the Acquires waiting in order, and
// the counts of Stats.
type poolModel struct {
	maxSize int
	idle    []int
	out     []int
	waiting []*poolWaiter
	closed  bool

	next     int // the value the next New makes
	failNext int // how many calls to New fail from now on

	created, createFailures, closedDestroy, closedPool int64
	acquired, canceled, empty, waited                  int64
}

// A poolWaiter is an Acquire run in a goroutine, and what the model says it
// returns once it does.
type poolWaiter struct {
	cancel context.CancelFunc
	res    chan acquired

	settled bool
	value   int
	err     error
}

type acquired struct {
	r   *Resource[int]
	err error
}

var errNew = errors.New("New failed")

func (m *poolModel) total() int { return len(m.idle) + len(m.out) }

// makeOne is a call to New: the value it makes, or its error.
func (m *poolModel) makeOne() (int, error) {
	if m.failNext > 0 {
		m.failNext--
		m.createFailures++
		return 0, errNew
	}
	m.next++
	m.created++
	return m.next, nil
}

func (m *poolModel) give(w *poolWaiter, v int) {
	w.settled, w.value = true, v
	m.out = append(m.out, v)
	m.acquired++
}

func (m *poolModel) fail(w *poolWaiter, err error) { w.settled, w.err = true, err }

// acquire is an Acquire arriving.
func (m *poolModel) acquire(w *poolWaiter) {
	switch {
	case m.closed:
		m.fail(w, ErrClosed)
	case len(m.idle) > 0:
		v := m.idle[len(m.idle)-1]
		m.idle = m.idle[:len(m.idle)-1]
		m.give(w, v)
	default:
		m.empty++
		if m.total() >= m.maxSize {
			m.waited++
		}
		m.waiting = append(m.waiting, w)
		m.fill()
	}
}

// fill makes resources for the waiting Acquires, oldest first, while the pool
// has room: each gets the value made for it, or New's error.
func (m *poolModel) fill() {
	for len(m.waiting) > 0 && m.total() < m.maxSize {
		w := m.waiting[0]
		m.waiting = m.waiting[1:]
		if v, err := m.makeOne(); err != nil {
			m.fail(w, err)
		} else {
			m.give(w, v)
		}
	}
}

// takeBack removes v from the values out.
func (m *poolModel) takeBack(v int) {
	for i, o := range m.out {
		if o == v {
			m.out = append(m.out[:i], m.out[i+1:]...)
			return
		}
	}
	panic(fmt.Sprintf("value %d is not out", v))
}

// FuzzPoolModel runs a script of Acquires, TryAcquires, Releases, Destroys,
// ends of waiting Acquires' ctxs, failures of New and a Close against
// poolModel: after each step, every Acquire's outcome (the value it got, or
// its error) and Stats; at the end, that Config.Close ran once on every value
// made. Each step is two bytes: an operation and its argument.
func FuzzPoolModel(f *testing.F) {
	// Fill the pool, wait, get released resources in order, the warmest
	// first when idle.
	f.Add(uint8(2), []byte{0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 2, 0, 2, 0, 1, 0, 0, 0})
	// Destroy makes a new one for the head waiter; New fails for it.
	f.Add(uint8(1), []byte{0, 0, 0, 0, 0, 0, 3, 0, 5, 0, 3, 0, 2, 0, 2, 0})
	// A waiter gives up; Close fails the others and closes what is out.
	f.Add(uint8(2), []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 4, 1, 2, 0, 6, 0, 0, 0, 2, 0})
	// New fails for the first Acquire; TryAcquire takes only idle ones.
	f.Add(uint8(3), []byte{5, 0, 0, 0, 1, 0, 0, 0, 2, 0, 1, 0, 1, 0})
	f.Fuzz(func(t *testing.T, sizeB uint8, script []byte) {
		synctest.Test(t, func(t *testing.T) {
			m := &poolModel{maxSize: 1 + int(sizeB%3)}
			var mu sync.Mutex // guards the fields below, which the pool's goroutines use
			failNext := 0     // New's copy of m.failNext, set before each step
			made, closes := 0, map[int]int{}
			p, err := New(Config[int]{
				MaxSize: m.maxSize,
				New: func(context.Context) (int, error) {
					mu.Lock()
					defer mu.Unlock()
					if failNext > 0 {
						failNext--
						return 0, errNew
					}
					made++
					return made, nil
				},
				Close: func(v int) error {
					mu.Lock()
					defer mu.Unlock()
					closes[v]++
					return nil
				},
			})
			require.NoError(t, err)
			out := map[int]*Resource[int]{} // by value
			var all []*poolWaiter
			for ; len(script) >= 2; script = script[2:] {
				op, arg := script[0]%7, int(script[1])
				mu.Lock()
				failNext = m.failNext
				mu.Unlock()
				switch op {
				case 0:
					ctx, cancel := context.WithCancel(t.Context())
					w := &poolWaiter{cancel: cancel, res: make(chan acquired, 1)}
					all = append(all, w)
					go func() {
						r, err := p.Acquire(ctx)
						w.res <- acquired{r, err}
					}()
					m.acquire(w)
				case 1:
					r, ok := p.TryAcquire()
					want := !m.closed && len(m.idle) > 0
					require.Equal(t, want, ok, "TryAcquire with %d idle", len(m.idle))
					if want {
						v := m.idle[len(m.idle)-1]
						m.idle = m.idle[:len(m.idle)-1]
						require.Equal(t, v, r.Value(), "TryAcquire took")
						m.out = append(m.out, v)
						m.acquired++
						out[v] = r
					}
				case 2, 3:
					if len(m.out) == 0 {
						continue
					}
					v := m.out[arg%len(m.out)]
					r := out[v]
					delete(out, v)
					m.takeBack(v)
					if op == 2 {
						r.Release()
						if len(m.waiting) > 0 {
							w := m.waiting[0]
							m.waiting = m.waiting[1:]
							m.give(w, v)
						} else {
							m.idle = append(m.idle, v)
						}
						break
					}
					r.Destroy()
					m.closedDestroy++
					m.fill()
				case 4:
					if len(m.waiting) == 0 {
						continue
					}
					i := arg % len(m.waiting)
					w := m.waiting[i]
					m.waiting = append(m.waiting[:i], m.waiting[i+1:]...)
					w.cancel()
					m.fail(w, context.Canceled)
					m.canceled++
				case 5:
					m.failNext++
					continue
				case 6:
					// Close with a ctx already done: it does not wait for the
					// resources out, it closes them.
					ctx, cancel := context.WithCancel(t.Context())
					cancel()
					wantErr := error(nil)
					if len(m.out) > 0 {
						wantErr = context.Canceled
					}
					if m.closed {
						wantErr = nil // nothing out: the first Close closed it all
					}
					require.Equal(t, wantErr, p.Close(ctx))
					if !m.closed {
						m.closed = true
						for _, w := range m.waiting {
							m.fail(w, ErrClosed)
						}
						m.waiting = nil
						m.closedPool += int64(len(m.idle) + len(m.out))
						m.idle, m.out = nil, nil
						clear(out)
					}
				}
				synctest.Wait()

				waiting := all[:0]
				for _, w := range all {
					if !w.settled {
						require.Empty(t, w.res, "an Acquire returned while the model has it waiting")
						waiting = append(waiting, w)
						continue
					}
					require.NotEmpty(t, w.res, "an Acquire still waits; the model says it returned (%d, %v)", w.value, w.err)
					a := <-w.res
					require.Equal(t, w.err, a.err)
					if w.err == nil {
						require.Equal(t, w.value, a.r.Value())
						out[w.value] = a.r
					}
				}
				all = waiting

				s := p.Stats()
				want := Stats{
					Idle: len(m.idle), InUse: len(m.out), Total: m.total(), Max: m.maxSize,
					AcquireCount: m.acquired, EmptyAcquires: m.empty, WaitCount: m.waited,
					CanceledAcquires: m.canceled, Created: m.created, CreateFailures: m.createFailures,
					ClosedDestroy: m.closedDestroy, ClosedPool: m.closedPool,
				}
				s.WaitDuration = 0
				require.Equal(t, want, s)
			}
			for _, w := range all {
				w.cancel()
			}
			ctx, cancel := context.WithCancel(t.Context())
			cancel()
			_ = p.Close(ctx)
			mu.Lock()
			defer mu.Unlock()
			for v := 1; v <= made; v++ {
				require.Equal(t, 1, closes[v], "Config.Close of value %d", v)
			}
			require.Len(t, closes, made)
		})
	})
}
