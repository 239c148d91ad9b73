package group_test

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ctxsync/ctxsync/group"
)

// A fuzzScript is a group's story: its Options, when the parent ctx ends,
// and the tasks that one goroutine hands to Go in order, each with how long
// it works and how it ends (unless its ctx ends first, which it watches).
type fuzzScript struct {
	opts     group.Options
	cancelAt time.Duration // 0: never
	tasks    []fuzzTask
}

type fuzzTask struct {
	d       time.Duration
	outcome int // fuzzOK, fuzzFail, fuzzPanic or fuzzGoexit
}

const (
	fuzzOK = iota
	fuzzFail
	fuzzPanic
	fuzzGoexit // runtime.Goexit: a failure with ErrGoexit
)

// parseScript reads a script from fuzz input. Durations are whole tens of
// milliseconds plus 2^i ns for task i, and the parent ends at a five: no two
// events fall on one instant, so the order of events is the model's alone.
func parseScript(data []byte) fuzzScript {
	var s fuzzScript
	if len(data) == 0 {
		return s
	}
	head := data[0]
	s.opts = group.Options{Limit: int(head % 4), CollectAll: head&4 != 0}
	if k := head >> 3 & 7; k != 0 {
		s.cancelAt = time.Duration(k)*10*time.Millisecond + 5*time.Millisecond
	}
	for i, b := range data[1:min(len(data), 21)] {
		t := fuzzTask{d: time.Duration(b>>3%8+1)*10*time.Millisecond + time.Duration(1)<<i}
		switch b % 8 {
		case 4:
			t.outcome = fuzzGoexit
		case 5, 6:
			t.outcome = fuzzFail
		case 7:
			t.outcome = fuzzPanic
		}
		s.tasks = append(s.tasks, t)
	}
	return s
}

// fuzzOutcome is what a run of a script shows.
type fuzzOutcome struct {
	ran     []bool // f ran
	refused []bool // Go returned an error (always context.Canceled here)
	panic   int    // the task whose panic Wait raised, or -1
	first   int    // fail-fast: the task whose error Wait returned; -1 none, -2 context.Canceled, -3 ErrGoexit
	failed  []int  // CollectAll: the tasks whose own error is joined, sorted
	nCancel int    // CollectAll: how many context.Canceled are joined
	nGoexit int    // CollectAll: how many ErrGoexit are joined
}

func (o fuzzOutcome) String() string {
	return fmt.Sprintf("ran %v refused %v panic %d first %d failed %v canceled %d goexit %d",
		o.ran, o.refused, o.panic, o.first, o.failed, o.nCancel, o.nGoexit)
}

func equalOutcome(a, b fuzzOutcome) bool {
	return slices.Equal(a.ran, b.ran) && slices.Equal(a.refused, b.refused) &&
		a.panic == b.panic && a.first == b.first && slices.Equal(a.failed, b.failed) &&
		a.nCancel == b.nCancel && a.nGoexit == b.nGoexit
}

// model plays a script out by hand: an event loop over the tasks' ends and
// the parent's end.
func model(s fuzzScript) fuzzOutcome {
	n := len(s.tasks)
	o := fuzzOutcome{ran: make([]bool, n), refused: make([]bool, n), panic: -1, first: -1}
	type run struct {
		i   int
		end time.Duration
	}
	var running []run
	var now time.Duration
	cancelled := false
	taskErr := func(i int) { // task i ends with an error: -2 for context.Canceled, -3 for ErrGoexit
		switch {
		case !s.opts.CollectAll:
			if o.first == -1 {
				o.first = i
			}
		case i == -2:
			o.nCancel++
		case i == -3:
			o.nGoexit++
		default:
			o.failed = append(o.failed, i)
		}
	}
	cancel := func() {
		cancelled = true
		for range running {
			taskErr(-2) // the tasks in flight see ctx end, and return its error
		}
		running = nil
	}
	step := func() { // the next event
		next := -1
		for k, r := range running {
			if next < 0 || r.end < running[next].end {
				next = k
			}
		}
		if !cancelled && s.cancelAt > 0 && (next < 0 || s.cancelAt < running[next].end) {
			now = s.cancelAt
			cancel()
			return
		}
		r := running[next]
		running = slices.Delete(running, next, next+1)
		now = r.end
		switch s.tasks[r.i].outcome {
		case fuzzFail, fuzzGoexit:
			if s.tasks[r.i].outcome == fuzzGoexit {
				taskErr(-3)
			} else {
				taskErr(r.i)
			}
			if !s.opts.CollectAll {
				cancel()
			}
		case fuzzPanic:
			if o.panic < 0 {
				o.panic = r.i
			}
			cancel()
		}
	}
	for i, t := range s.tasks {
		for {
			if cancelled {
				o.refused[i] = true
				break
			}
			if s.opts.Limit == 0 || len(running) < s.opts.Limit {
				o.ran[i] = true
				running = append(running, run{i, now + t.d})
				break
			}
			step()
		}
	}
	for len(running) > 0 {
		step()
	}
	slices.Sort(o.failed)
	if o.panic >= 0 { // Wait raises the panic: the errors do not show
		o.first, o.failed, o.nCancel, o.nGoexit = -1, nil, 0, 0
	}
	return o
}

// play runs a script on a real Group in a synctest bubble.
func play(t *testing.T, s fuzzScript) fuzzOutcome {
	n := len(s.tasks)
	o := fuzzOutcome{ran: make([]bool, n), refused: make([]bool, n), panic: -1, first: -1}
	errs := make([]error, n)
	for i := range errs {
		errs[i] = fmt.Errorf("task %d", i)
	}
	synctest.Test(t, func(t *testing.T) {
		parent, cancel := context.WithCancel(context.Background())
		defer cancel()
		if s.cancelAt > 0 {
			time.AfterFunc(s.cancelAt, cancel)
		}
		g, _ := group.New(parent, s.opts)
		for i, task := range s.tasks {
			err := g.Go(func(ctx context.Context) error {
				o.ran[i] = true
				timer := time.NewTimer(task.d)
				defer timer.Stop()
				select {
				case <-ctx.Done():
					return ctx.Err()
				case <-timer.C:
				}
				switch task.outcome {
				case fuzzFail:
					return errs[i]
				case fuzzPanic:
					panic(i)
				case fuzzGoexit:
					runtime.Goexit()
				}
				return nil
			})
			if err != nil {
				if err != context.Canceled {
					t.Errorf("Go = %v, want nil or context.Canceled", err)
				}
				o.refused[i] = true
			}
		}
		wait := func() (p any, err error) {
			defer func() { p = recover() }()
			return nil, g.Wait()
		}
		p, err := wait()
		// Wait again: the identical error, or the identical panic.
		if p2, err2 := wait(); err2 != err || p2 != p {
			t.Errorf("Wait = %v, %v; again = %v, %v: want the same values", err, p, err2, p2)
		}
		if p != nil {
			o.panic = p.(*group.PanicError).Value.(int)
			return
		}
		if !s.opts.CollectAll {
			switch {
			case err == context.Canceled:
				o.first = -2
			case err == group.ErrGoexit:
				o.first = -3
			case err != nil:
				o.first = slices.Index(errs, err)
			}
			return
		}
		if err == nil {
			return
		}
		for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
			switch e {
			case context.Canceled:
				o.nCancel++
			case group.ErrGoexit:
				o.nGoexit++
			default:
				o.failed = append(o.failed, slices.Index(errs, e))
			}
		}
		slices.Sort(o.failed)
	})
	return o
}

// FuzzGroup checks a Group against the model: which tasks ran, which Go
// calls were refused, and what Wait returned or raised.
func FuzzGroup(f *testing.F) {
	f.Add([]byte{1, 5, 0, 0})                       // Limit 1: the failure refuses the rest
	f.Add([]byte{5, 5, 0, 5})                       // Limit 1, CollectAll: all run
	f.Add([]byte{2, 8, 16, 7, 0, 0})                // Limit 2 and a panic
	f.Add([]byte{0x18, 0x38, 0x38, 0x38, 0x38})     // no limit, the parent ends first
	f.Add([]byte{0x1e, 0x38, 0x30, 0x25, 0x3d, 0})  // Limit 2, CollectAll, parent ends
	f.Add([]byte{3, 8, 16, 24, 32, 40, 0x2d, 0x36}) // Limit 3, failures late
	f.Add([]byte{2, 0x0c, 0x10, 0x18})              // Limit 2, a Goexit refuses the last
	f.Add([]byte{4, 0x0c, 0x14, 0x0d, 0})           // CollectAll: Goexits and an error joined
	f.Fuzz(func(t *testing.T, data []byte) {
		s := parseScript(data)
		want, got := model(s), play(t, s)
		if !equalOutcome(got, want) {
			t.Errorf("%+v:\n got %v\nwant %v", s, got, want)
		}
	})
}

// TestModelSanity pins the model on a script worked by hand, so a wrong model
// cannot agree with a wrong Group.
func TestModelSanity(t *testing.T) {
	// Limit 1, fail-fast; tasks: ok, fail, ok.
	o := model(parseScript([]byte{1, 0, 5, 0}))
	want := fuzzOutcome{ran: []bool{true, true, false}, refused: []bool{false, false, true}, panic: -1, first: 1}
	if !equalOutcome(o, want) {
		t.Errorf("model = %v, want %v", o, want)
	}
}
