package group_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ctxsync/ctxsync/group"
)

// MapAll's outcome for an item, as the model and a run see it.
const (
	itemOK       = iota
	itemFailed   // f's own error
	itemGoexit   // ErrGoexit
	itemCanceled // context.Canceled: from f, which saw ctx end, or not started
)

// mapOutcome is what a run of MapAll on a script's items shows.
type mapOutcome struct {
	ran    []bool // f was called
	errs   []int  // each item's outcome; nil when MapAll returned no error slice
	panic  int    // the item whose panic MapAll raised, or -1
	exited bool   // f called runtime.Goexit in the caller's goroutine, which ended
}

func (o mapOutcome) String() string {
	return fmt.Sprintf("ran %v errs %v panic %d exited %v", o.ran, o.errs, o.panic, o.exited)
}

func equalMapOutcome(a, b mapOutcome) bool {
	return slices.Equal(a.ran, b.ran) && slices.Equal(a.errs, b.errs) && a.panic == b.panic && a.exited == b.exited
}

// mapModel plays MapAll out by hand. MapAll runs min(limit, n) workers (all
// of them without a limit), the first in the caller's goroutine; all start at
// once, worker k with item k, and each takes the next item as it finishes
// one. An f that calls runtime.Goexit ends its worker (the caller, if it is
// the first); a panic cancels ctx, as the parent's end does, and the items in
// flight and those not started end with context.Canceled.
func mapModel(s fuzzScript) mapOutcome {
	n := len(s.tasks)
	o := mapOutcome{ran: make([]bool, n), errs: make([]int, n), panic: -1}
	if n == 0 {
		o.errs = nil
		return o
	}
	workers := n
	if s.opts.Limit > 0 {
		workers = min(s.opts.Limit, n)
	}
	type run struct {
		w, i int
		end  time.Duration
	}
	var running []run
	next := 0
	cancelled := false
	take := func(w int, now time.Duration) {
		if next < n {
			running = append(running, run{w, next, now + s.tasks[next].d})
			o.ran[next] = true
			next++
		}
	}
	for w := range workers {
		take(w, 0)
	}
	cancel := func() {
		cancelled = true
		for _, r := range running {
			o.errs[r.i] = itemCanceled
		}
		running = nil
		for ; next < n; next++ {
			o.errs[next] = itemCanceled
		}
	}
	for len(running) > 0 && !o.exited {
		k := 0
		for j, r := range running {
			if r.end < running[k].end {
				k = j
			}
		}
		r := running[k]
		if !cancelled && s.cancelAt > 0 && s.cancelAt < r.end {
			cancel()
			break
		}
		running = slices.Delete(running, k, k+1)
		switch s.tasks[r.i].outcome {
		case fuzzOK:
			take(r.w, r.end)
		case fuzzFail:
			o.errs[r.i] = itemFailed
			take(r.w, r.end)
		case fuzzGoexit:
			o.errs[r.i] = itemGoexit
			if r.w == 0 {
				o.exited = true // and MapAll never returns
			}
		case fuzzPanic:
			o.panic = r.i
			cancel()
		}
	}
	if o.exited || o.panic >= 0 {
		o.errs = nil
		return o
	}
	if !slices.ContainsFunc(o.errs, func(e int) bool { return e != itemOK }) {
		o.errs = nil
	}
	return o
}

// playMap runs MapAll on a script's items in a synctest bubble, in a
// goroutine of its own, which an f calling runtime.Goexit there may end.
func playMap(t *testing.T, s fuzzScript) mapOutcome {
	n := len(s.tasks)
	o := mapOutcome{ran: make([]bool, n), panic: -1}
	boom := errors.New("boom")
	synctest.Test(t, func(t *testing.T) {
		parent, cancel := context.WithCancel(context.Background())
		defer cancel()
		if s.cancelAt > 0 {
			time.AfterFunc(s.cancelAt, cancel)
		}
		items := make([]int, n)
		for i := range items {
			items[i] = i
		}
		var res []int
		var errs []error
		returned := false
		done := make(chan struct{})
		go func() {
			defer close(done)
			defer func() {
				if v := recover(); v != nil {
					o.panic = v.(*group.PanicError).Value.(int)
				}
			}()
			res, errs = group.MapAll(parent, items, s.opts.Limit, func(ctx context.Context, i int) (int, error) {
				o.ran[i] = true
				timer := time.NewTimer(s.tasks[i].d)
				defer timer.Stop()
				select {
				case <-ctx.Done():
					return -1, ctx.Err()
				case <-timer.C:
				}
				switch s.tasks[i].outcome {
				case fuzzFail:
					return i + 100, boom
				case fuzzPanic:
					panic(i)
				case fuzzGoexit:
					runtime.Goexit()
				}
				return i + 100, nil
			})
			returned = true
		}()
		<-done
		o.exited = !returned && o.panic < 0
		if !returned {
			return
		}
		if errs != nil {
			o.errs = make([]int, n)
		}
		for i, e := range errs {
			switch e {
			case nil:
				o.errs[i] = itemOK
			case boom:
				o.errs[i] = itemFailed
			case group.ErrGoexit:
				o.errs[i] = itemGoexit
			case context.Canceled:
				o.errs[i] = itemCanceled
			default:
				t.Errorf("MapAll: error %d = %v", i, e)
			}
		}
		for i, r := range res {
			if (errs == nil || errs[i] == nil || errs[i] == boom) && r != i+100 {
				t.Errorf("MapAll: result %d = %d, want %d", i, r, i+100)
			}
		}
	})
	return o
}

// FuzzMapAll checks MapAll against the model: which items ran, and each
// item's outcome, Goexit in any of its goroutines included.
func FuzzMapAll(f *testing.F) {
	f.Add([]byte{2, 0, 0x0c, 0})             // Limit 2: a Goexit in a goroutine of MapAll's
	f.Add([]byte{2, 0x0c, 0x20, 0})          // Limit 2: a Goexit in the caller's goroutine
	f.Add([]byte{1, 0, 5, 0x0c})             // Limit 1: everything in the caller
	f.Add([]byte{0x18, 0x38, 0x14, 0x38, 0}) // no limit, the parent ends
	f.Add([]byte{3, 8, 0x0f, 0x14, 0x1d, 0}) // Limit 3: a panic cancels the rest
	f.Fuzz(func(t *testing.T, data []byte) {
		s := parseScript(data)
		want, got := mapModel(s), playMap(t, s)
		if !equalMapOutcome(got, want) {
			t.Errorf("%+v:\n got %v\nwant %v", s, got, want)
		}
	})
}

// TestMapModelSanity pins the MapAll model on scripts worked by hand.
func TestMapModelSanity(t *testing.T) {
	// Limit 2; items: ok 10ms, Goexit 10ms, ok 20ms. Worker 1 (a goroutine
	// of MapAll's) ends at 10ms with item 1; the caller's worker runs item 2.
	o := mapModel(parseScript([]byte{2, 0, 4, 8}))
	want := mapOutcome{ran: []bool{true, true, true}, errs: []int{itemOK, itemGoexit, itemOK}, panic: -1}
	if !equalMapOutcome(o, want) {
		t.Errorf("model = %v, want %v", o, want)
	}
	// The same, the Goexit first: the caller's goroutine ends.
	o = mapModel(parseScript([]byte{2, 4, 0, 8}))
	want = mapOutcome{ran: []bool{true, true, false}, panic: -1, exited: true}
	if !equalMapOutcome(o, want) {
		t.Errorf("model = %v, want %v", o, want)
	}
}
