package pool

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync/internal/testutil"
)

// poolModel is what a Pool of MaxSize resources (with MaxLifetime,
// MaxIdleTime, HealthCheck and the background sweep, but no MinIdle) should
// be between steps, once its goroutines are idle: the idle values, warmest
// last, the values out, the Acquires waiting in order, and the counts of
// Stats.
type poolModel struct {
	maxSize int
	idle    []int
	out     []int
	waiting []*poolWaiter
	closed  bool

	// Time-based settings; 0 for off.
	lifetime, maxIdle, skip time.Duration
	checked                 bool              // a HealthCheck is set
	made, lastUsed          map[int]time.Time // of each value
	bad                     map[int]bool      // values the HealthCheck fails
	panicky                 map[int]bool      // values the HealthCheck panics on
	now                     func() time.Time  // the bubble's clock
	period                  time.Duration     // of the sweep; 0 for none while the script runs
	swept                   time.Time         // when the last sweep ran

	next  int    // the value the next New makes
	fails []bool // the calls to New that fail from now on: true for a panic, false for an error

	created, createFailures, closedDestroy, closedPool int64
	closedLifetime, closedIdle, closedHealth           int64
	acquired, canceled, empty, waited, closeErrors     int64
}

// A poolWaiter is an Acquire run in a goroutine, and what the model says it
// returns once it does.
type poolWaiter struct {
	cancel context.CancelFunc
	res    chan acquired

	settled  bool
	value    int
	err      error
	panicked bool // the Acquire panics (with New's or HealthCheck's panic)
}

type acquired struct {
	r        *Resource[int]
	err      error
	panicked any
}

var errNew = errors.New("New failed")

func (m *poolModel) total() int { return len(m.idle) + len(m.out) }

// makeOne is a call to New: the value it makes, or its error, or whether it
// panicked.
func (m *poolModel) makeOne() (int, error, bool) {
	if len(m.fails) > 0 {
		panicked := m.fails[0]
		m.fails = m.fails[1:]
		m.createFailures++
		return 0, errNew, panicked
	}
	m.next++
	m.created++
	m.made[m.next], m.lastUsed[m.next] = m.now(), m.now()
	return m.next, nil, false
}

func (m *poolModel) pastLifetime(v int) bool {
	return m.lifetime > 0 && !m.now().Before(m.made[v].Add(m.lifetime))
}

// sweepAt is the background sweep at t: it closes the idle values whose time
// is up, and checks those not used for skip, one after another, putting those
// that pass back at the warm end. (Idle values and waiting Acquires never
// coexist between steps, so nothing here goes to a waiter.)
func (m *poolModel) sweepAt(t time.Time) {
	if m.closed {
		return
	}
	var keep, check []int
	for _, v := range m.idle {
		idleFor := t.Sub(m.lastUsed[v])
		switch {
		case m.lifetime > 0 && !t.Before(m.made[v].Add(m.lifetime)):
			m.closedLifetime++
		case m.maxIdle > 0 && idleFor >= m.maxIdle:
			m.closedIdle++
		case m.checked && idleFor >= m.skip:
			check = append(check, v)
		default:
			keep = append(keep, v)
		}
	}
	m.idle = keep
	for _, v := range check {
		if m.bad[v] {
			m.closedHealth++
		} else {
			m.idle = append(m.idle, v)
		}
	}
}

// sweepUntil runs the sweeps due by t, every period since the pool was made.
func (m *poolModel) sweepUntil(t time.Time) {
	if m.period == 0 {
		return
	}
	for next := m.swept.Add(m.period); !next.After(t); next = next.Add(m.period) {
		m.sweepAt(next)
		m.swept = next
	}
}

// takeIdle pops the warmest idle value that is still good, closing those that
// are not: past their lifetime, idle too long, or (if check) failing the
// HealthCheck, which a value released within skip is spared. A HealthCheck
// that panics closes its value and ends the search: the Acquire panics.
func (m *poolModel) takeIdle(check bool) (v int, ok, panicked bool) {
	for len(m.idle) > 0 {
		v := m.idle[len(m.idle)-1]
		m.idle = m.idle[:len(m.idle)-1]
		idleFor := m.now().Sub(m.lastUsed[v])
		switch {
		case m.pastLifetime(v):
			m.closedLifetime++
		case m.maxIdle > 0 && idleFor >= m.maxIdle:
			m.closedIdle++
		case check && m.checked && (m.bad[v] || m.panicky[v]) && (m.skip < 0 || idleFor >= m.skip):
			m.closedHealth++
			if m.panicky[v] {
				return 0, false, true
			}
		default:
			return v, true, false
		}
	}
	return 0, false, false
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
	default:
		v, ok, panicked := m.takeIdle(true)
		if panicked {
			w.settled, w.panicked = true, true
			return
		}
		if ok {
			m.give(w, v)
			return
		}
		m.empty++
		m.waited++ // queued, for a release or a new resource
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
		if v, err, panicked := m.makeOne(); panicked {
			w.settled, w.panicked = true, true
		} else if err != nil {
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
// ends of waiting Acquires' ctxs, failures of New, a Close, the passing of
// virtual time and values going bad against poolModel: after each step, every
// Acquire's outcome (the value it got, or its error) and Stats; at the end,
// that Config.Close ran once on every value made. The first byte sets the
// size (its low bits) and which of MaxLifetime, MaxIdleTime, HealthCheck and
// a sweep every 50 ms are on, and whether the times are math.MaxInt64; each
// step of the script is two bytes: an operation and its argument, whose high
// bit makes Config.Close panic in a Destroy, and a HealthCheck panic, and
// whose low bit makes New panic rather than fail.
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
	// Lifetimes: a value past its lifetime is closed on Release (and a
	// waiter gets a new one) or when found idle.
	f.Add(uint8(4), []byte{0, 0, 0, 0, 7, 5, 2, 0, 1, 0, 7, 5, 2, 0, 0, 0, 7, 9, 0, 0})
	// Idle times, and a HealthCheck that a value released lately is spared.
	f.Add(uint8(1<<3|1<<4|1), []byte{0, 0, 0, 0, 2, 0, 8, 0, 8, 1, 7, 2, 2, 0, 0, 0, 7, 6, 0, 0, 7, 7, 1, 0})
	f.Add(uint8(1<<4|1<<5|2), []byte{0, 0, 0, 0, 0, 0, 2, 0, 2, 1, 8, 1, 0, 0, 1, 0, 2, 0, 8, 2, 3, 0, 0, 0})
	// Each time on its boundary: a lifetime of 100 ms ends at 100 ms, an
	// idle time of 60 ms at 60 ms, counted from the last Release; a Release
	// 30 ms ago no longer spares the HealthCheck.
	f.Add(uint8(1<<2), []byte{0, 0, 2, 0, 7, 7, 7, 3, 0, 0})
	f.Add(uint8(1<<3), []byte{0, 0, 2, 0, 7, 6, 0, 0})
	f.Add(uint8(1<<3), []byte{0, 0, 7, 5, 2, 0, 7, 2, 0, 0})
	f.Add(uint8(1<<4), []byte{0, 0, 2, 0, 8, 0, 7, 3, 0, 0})
	// The sweep every 50 ms closes what went bad, idled or aged in the
	// pool, and puts back what passes its check.
	f.Add(uint8(1<<6|1<<4), []byte{0, 0, 2, 0, 8, 0, 7, 5, 0, 0})
	f.Add(uint8(1<<6|1<<4), []byte{0, 0, 7, 2, 2, 0, 8, 0, 7, 3, 1, 0}) // released 30 ms before the sweep
	f.Add(uint8(1<<6|1<<3), []byte{0, 0, 2, 0, 7, 7, 7, 3, 1, 0})
	f.Add(uint8(1<<6|1<<2), []byte{0, 0, 2, 0, 7, 7, 7, 3, 1, 0})
	f.Add(uint8(1<<6|1<<5|1<<4|1), []byte{0, 0, 0, 0, 2, 0, 2, 1, 7, 5, 1, 0, 1, 0})
	// A panic of New reaches the Acquire it was made for; one of
	// Config.Close reaches Destroy's caller; one of HealthCheck reaches the
	// Acquire that ran it: each time the slot frees.
	f.Add(uint8(1), []byte{5, 1, 0, 0, 0, 0, 2, 0})
	f.Add(uint8(2), []byte{0, 0, 0, 0, 5, 1, 0, 0, 3, 0x80, 2, 0, 2, 0})
	f.Add(uint8(1<<4|1), []byte{0, 0, 2, 0, 8, 0x80, 7, 3, 0, 0, 0, 0, 2, 0})
	// A lifetime and an idle time of math.MaxInt64 never end.
	f.Add(uint8(1<<7|1<<3|1<<2), []byte{0, 0, 2, 0, 7, 7, 7, 7, 0, 0, 2, 0, 7, 9, 1, 0})
	f.Fuzz(fuzzPoolModel)
}

// fuzzPoolModel is the body of FuzzPoolModel.
func fuzzPoolModel(t *testing.T, sizeB uint8, script []byte) {
	synctest.Test(t, func(t *testing.T) {
		m := &poolModel{maxSize: 1 + int(sizeB%4)%3, now: time.Now,
			made: map[int]time.Time{}, lastUsed: map[int]time.Time{}, bad: map[int]bool{}, panicky: map[int]bool{}}
		cfg := Config[int]{HealthCheckPeriod: 1000 * time.Hour} // no sweep while the script runs
		if sizeB&(1<<6) != 0 {
			m.period, m.swept = 50*time.Millisecond, time.Now()
			cfg.HealthCheckPeriod = m.period
		}
		huge := sizeB&(1<<7) != 0 // times at the end of the clock: never
		if sizeB&(1<<2) != 0 {
			m.lifetime = 100 * time.Millisecond
			if huge {
				m.lifetime = math.MaxInt64
			}
			cfg.MaxLifetime, cfg.MaxLifetimeJitter = m.lifetime, NoLifetimeJitter
		}
		if sizeB&(1<<3) != 0 {
			m.maxIdle = 60 * time.Millisecond
			if huge {
				m.maxIdle = math.MaxInt64
			}
			cfg.MaxIdleTime = m.maxIdle
		}
		m.checked = sizeB&(1<<4) != 0
		m.skip = 30 * time.Millisecond
		if sizeB&(1<<5) != 0 {
			m.skip = -1 // check every time
		}
		cfg.HealthCheckSkip = m.skip

		var mu sync.Mutex // guards the fields below, which the pool's goroutines use
		var fails []bool  // New's copy of m.fails, set before each step
		made, closes := 0, map[int]int{}
		bad, panicky := map[int]bool{}, map[int]bool{}
		closePanics := false // Config.Close panics, for one Destroy
		if m.checked {
			cfg.HealthCheck = func(_ context.Context, v int) error {
				mu.Lock()
				defer mu.Unlock()
				if panicky[v] {
					panic("check exploded")
				}
				if bad[v] {
					return errors.New("gone bad")
				}
				return nil
			}
		}
		cfg.MaxSize = m.maxSize
		// What the hooks are told must add up to the Stats.
		// A name from the script, its bytes as they come (UTF-8 or not):
		// the events carry it unchanged.
		cfg.Name = string(script[:min(len(script), 3)])
		var told toldHooks
		var acquireErrs, releases int64 // what the callers saw
		cfg.Hooks = Hooks{
			OnAcquire: func(e AcquireEvent) {
				told.Lock()
				defer told.Unlock()
				if e.Name != cfg.Name {
					told.misnamed++
				}
				if e.Err == nil {
					told.acquired++
				} else {
					told.acquireErrs++
				}
				if e.Waited {
					told.waited++
				} else if e.Wait != 0 {
					panic("an Acquire that did not wait told a wait")
				}
				told.wait += e.Wait
			},
			OnRelease: func() {
				told.Lock()
				told.releases++
				told.Unlock()
			},
			OnHealthCheckFail: func(error) {
				told.Lock()
				told.checkFails++
				told.Unlock()
			},
			OnClose: func(r CloseReason) {
				told.Lock()
				told.closed[r]++
				told.Unlock()
			},
			OnCreate: func(e CreateEvent) {
				told.Lock()
				told.creates++
				if e.Name != cfg.Name {
					told.misnamed++
				}
				told.Unlock()
			},
		}
		cfg.New = func(context.Context) (int, error) {
			mu.Lock()
			defer mu.Unlock()
			if len(fails) > 0 {
				panicked := fails[0]
				fails = fails[1:]
				if panicked {
					panic("New exploded")
				}
				return 0, errNew
			}
			made++
			return made, nil
		}
		cfg.Close = func(v int) error {
			mu.Lock()
			defer mu.Unlock()
			closes[v]++
			if closePanics {
				panic("Close exploded")
			}
			return nil
		}
		p, err := New(cfg)
		require.NoError(t, err)
		out := map[int]*Resource[int]{} // by value
		var all []*poolWaiter
		defer func() {
			// Also when a check fails: the waiters and the pool's
			// goroutine must end, or the bubble runs its timers for
			// ever instead of reporting the failure.
			for _, w := range all {
				w.cancel()
			}
			mu.Lock()
			closePanics = false
			mu.Unlock()
			_ = p.Close(testutil.Cancelled())
		}()
		for ; len(script) >= 2; script = script[2:] {
			op, arg := script[0]%9, int(script[1])
			mu.Lock()
			fails = append(fails[:0], m.fails...)
			mu.Unlock()
			switch op {
			case 0:
				ctx, cancel := context.WithCancel(t.Context())
				w := &poolWaiter{cancel: cancel, res: make(chan acquired, 1)}
				all = append(all, w)
				go func() {
					defer func() {
						if v := recover(); v != nil {
							w.res <- acquired{panicked: v}
						}
					}()
					r, err := p.Acquire(ctx)
					w.res <- acquired{r: r, err: err}
				}()
				m.acquire(w)
			case 1:
				r, ok := p.TryAcquire()
				v, want := 0, false
				if !m.closed {
					v, want, _ = m.takeIdle(false)
				}
				require.Equal(t, want, ok, "TryAcquire with %d idle", len(m.idle))
				if want {
					require.Equal(t, v, r.Value(), "TryAcquire took")
					m.out = append(m.out, v)
					m.acquired++
					out[v] = r
				}
			case 2, 3:
				if len(m.out) == 0 {
					continue
				}
				v := m.out[(arg&0x7f)%len(m.out)]
				r := out[v]
				delete(out, v)
				m.takeBack(v)
				if op == 2 {
					r.Release()
					if !m.pastLifetime(v) {
						releases++
					}
					if m.pastLifetime(v) {
						m.closedLifetime++
						m.fill()
						break
					}
					m.lastUsed[v] = m.now()
					if len(m.waiting) > 0 {
						w := m.waiting[0]
						m.waiting = m.waiting[1:]
						m.give(w, v)
					} else {
						m.idle = append(m.idle, v)
					}
					break
				}
				if arg&0x80 == 0 {
					r.Destroy()
				} else {
					// Config.Close panics: the panic reaches Destroy's
					// caller, and the slot frees all the same.
					mu.Lock()
					closePanics = true
					mu.Unlock()
					require.PanicsWithValue(t, "Close exploded", r.Destroy)
					mu.Lock()
					closePanics = false
					mu.Unlock()
					m.closeErrors++
				}
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
				m.fails = append(m.fails, arg&1 == 1) // odd: New panics
				continue
			case 7:
				time.Sleep(time.Duration(arg%8) * 10 * time.Millisecond)
				m.sweepUntil(time.Now())
			case 8:
				if m.next == 0 {
					continue
				}
				v := 1 + (arg&0x7f)%m.next
				// With the high bit, the check panics; not while the
				// background sweep runs, where a panic would end the
				// program (see Pool).
				if arg&0x80 != 0 && m.period == 0 {
					m.panicky[v] = true
					mu.Lock()
					panicky[v] = true
					mu.Unlock()
					continue
				}
				m.bad[v] = true
				mu.Lock()
				bad[v] = true
				mu.Unlock()
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
				if w.panicked {
					require.NotNil(t, a.panicked, "an Acquire returned (%v, %v); the model says it panicked", a.r, a.err)
					if _, ok := a.panicked.(*newPanic); ok {
						acquireErrs++ // told to OnAcquire, with its wait
					}
					continue
				}
				require.Nil(t, a.panicked, "an Acquire panicked")
				require.Equal(t, w.err, a.err)
				if a.err != nil {
					acquireErrs++
				}
				if w.err == nil {
					require.Equal(t, w.value, a.r.Value())
					out[w.value] = a.r
				}
			}
			all = waiting

			s := p.Stats()
			want := Stats{
				Name: cfg.Name, Idle: len(m.idle), InUse: len(m.out), Total: m.total(), Max: m.maxSize, Waiting: len(m.waiting),
				AcquireCount: m.acquired, EmptyAcquires: m.empty, WaitCount: m.waited,
				CanceledAcquires: m.canceled, Created: m.created, CreateFailures: m.createFailures,
				ClosedDestroy: m.closedDestroy, ClosedPool: m.closedPool,
				ClosedLifetime: m.closedLifetime, ClosedIdle: m.closedIdle, ClosedHealth: m.closedHealth,
				CloseErrors: m.closeErrors,
			}
			s.WaitDuration = 0
			require.Equal(t, want, s)
			told.Lock()
			told := told.snapshot() // unlocked: a failure below closes the pool, which tells the hooks
			require.Equal(t, [...]int64{0, s.ClosedIdle, s.ClosedLifetime, s.ClosedHealth, s.ClosedDestroy, s.ClosedPool},
				told.closed, "the closes told to OnClose")
			require.Equal(t, s.Created+s.CreateFailures, told.creates, "the calls to New told to OnCreate")
			require.Equal(t, s.AcquireCount, told.acquired, "the Acquires told to OnAcquire")
			require.Equal(t, acquireErrs, told.acquireErrs, "the failed Acquires told to OnAcquire")
			require.Equal(t, releases, told.releases, "the Releases told to OnRelease")
			// In the model a value's check fails only at Acquire or in the
			// sweep, each time closing it for that.
			require.Equal(t, s.ClosedHealth, told.checkFails, "the failed checks told to OnHealthCheckFail")
			require.Equal(t, time.Duration(p.waitNs.Load()), told.wait, "the waits told to OnAcquire")
			require.Zero(t, told.misnamed, "events whose Name was not Config.Name %q", cfg.Name)
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
}

// toldHooks counts what a pool's Hooks were told.
type toldHooks struct {
	sync.Mutex
	toldCounts
	name string // the pool's Config.Name, which every event must carry
}

type toldCounts struct {
	closed                       [ClosedPool + 1]int64
	creates                      int64
	acquired, acquireErrs        int64
	releases, checkFails, waited int64
	wait                         time.Duration
	misnamed                     int64 // events whose Name was not the pool's
}

// snapshot returns the counts and unlocks t, locked by the caller.
func (t *toldHooks) snapshot() toldCounts {
	defer t.Unlock()
	return t.toldCounts
}
