package ctxsyncprom_test

import (
	"runtime"
	"testing"
	"time"

	"github.com/ctxsync/ctxsync/breaker"
	"github.com/ctxsync/ctxsync/extra/ctxsyncprom"
	"github.com/ctxsync/ctxsync/pool"
)

// endsHow runs f in a goroutine of its own and tells how it ended: with
// the value of a panic, or by runtime.Goexit.
func endsHow(f func()) (panicked any, exited bool) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		exited = true
		defer func() { panicked = recover() }()
		f()
		exited = false
	}()
	<-done
	return panicked, exited && panicked == nil
}

// TestMX13JoinedHooksAllRun pins a defect of JoinPoolHooks and JoinOnCall:
// a hook that panicked or called runtime.Goexit skipped every hook joined
// after it, for that event. The README's way of keeping hooks of one's own
// beside the Collector's is JoinPoolHooks(c.PoolHooks(""), mine): the
// Collector's hooks panic, by design, at the first event of a pool with no
// Config.Name, and the user's hook, joined after, then never saw that
// event, so that a program counting its own events lost one to its
// metrics. The right behaviour: every hook joined runs exactly once for
// each event, whatever those before it do, and the first panic (or the
// Goexit) then goes on to the caller.
func TestMX13JoinedHooksAllRun(t *testing.T) {
	c := ctxsyncprom.NewCollector(ctxsyncprom.Config{})
	type first struct {
		name   string
		goexit bool
		// pool and call are the hooks joined first, which break down.
		pool pool.Hooks
		call func(breaker.CallEvent)
	}
	breakDown := func(goexit bool) {
		if goexit {
			runtime.Goexit()
		}
		panic("first hook's")
	}
	firsts := []first{
		{name: "Collector's hooks of an unnamed source", pool: c.PoolHooks(""), call: c.BreakerOnCall("")},
		{name: "a hook that panics", pool: pool.Hooks{
			OnAcquire:         func(pool.AcquireEvent) { breakDown(false) },
			OnCreate:          func(pool.CreateEvent) { breakDown(false) },
			OnClose:           func(pool.CloseReason) { breakDown(false) },
			OnHealthCheckFail: func(error) { breakDown(false) },
			OnRelease:         func() { breakDown(false) },
		}, call: func(breaker.CallEvent) { breakDown(false) }},
		{name: "a hook that calls Goexit", goexit: true, pool: pool.Hooks{
			OnAcquire:         func(pool.AcquireEvent) { breakDown(true) },
			OnCreate:          func(pool.CreateEvent) { breakDown(true) },
			OnClose:           func(pool.CloseReason) { breakDown(true) },
			OnHealthCheckFail: func(error) { breakDown(true) },
			OnRelease:         func() { breakDown(true) },
		}, call: func(breaker.CallEvent) { breakDown(true) }},
	}
	for _, f := range firsts {
		t.Run(f.name, func(t *testing.T) {
			// Two hooks of the user's joined after the one that breaks
			// down: each must see each event once.
			var calls [2]map[string]int
			mine := func(i int) pool.Hooks {
				calls[i] = map[string]int{}
				return pool.Hooks{
					OnAcquire:         func(pool.AcquireEvent) { calls[i]["OnAcquire"]++ },
					OnCreate:          func(pool.CreateEvent) { calls[i]["OnCreate"]++ },
					OnClose:           func(pool.CloseReason) { calls[i]["OnClose"]++ },
					OnHealthCheckFail: func(error) { calls[i]["OnHealthCheckFail"]++ },
					OnRelease:         func() { calls[i]["OnRelease"]++ },
				}
			}
			h := ctxsyncprom.JoinPoolHooks(f.pool, mine(0), mine(1))
			var oncall [2]int
			call := ctxsyncprom.JoinOnCall(f.call, func(breaker.CallEvent) { oncall[0]++ }, func(breaker.CallEvent) { oncall[1]++ })
			events := map[string]func(){
				"OnAcquire": func() { h.OnAcquire(pool.AcquireEvent{Waited: true, Wait: time.Millisecond}) },
				"OnCreate":  func() { h.OnCreate(pool.CreateEvent{Duration: time.Millisecond}) },
				"OnCall":    func() { call(breaker.CallEvent{Outcome: breaker.Success}) },
			}
			if f.pool.OnClose != nil {
				events["OnClose"] = func() { h.OnClose(pool.ClosedIdle) }
				events["OnHealthCheckFail"] = func() { h.OnHealthCheckFail(nil) }
				events["OnRelease"] = func() { h.OnRelease() }
			}
			for ev, fire := range events {
				panicked, exited := endsHow(fire)
				switch {
				case f.goexit && !exited:
					t.Errorf("%s ended with panic %v, want the first hook's Goexit to go on", ev, panicked)
				case !f.goexit && panicked == nil:
					t.Errorf("%s: the first hook's panic was lost (Goexit %v)", ev, exited)
				}
				for i := range 2 {
					got := calls[i][ev]
					if ev == "OnCall" {
						got = oncall[i]
					}
					if got != 1 {
						t.Errorf("%s: hook %d joined after the one that broke down ran %d times, want 1", ev, i+1, got)
					}
				}
			}
		})
	}
}
