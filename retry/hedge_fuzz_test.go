package retry_test

import (
	"context"
	"errors"
	"runtime"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ctxsync/ctxsync"
	"github.com/ctxsync/ctxsync/retry"
)

// attemptError is the error of attempt id in FuzzDoHedged.
type attemptError struct{ id int }

func (e attemptError) Error() string { return "attempt failed" }

// hedgeOutcome is how an attempt ends in FuzzDoHedged.
type hedgeOutcome int

const (
	outSuccess hedgeOutcome = iota
	outFailure
	outPermanent
	outGoexit // a copy calls runtime.Goexit: a failure, ctxsync.ErrGoexit
)

// hedgeModel is what DoHedged should do, worked out in plain event order:
// attempt 0 starts at 0; copy k at k×delay, if the call is not decided and
// fewer than maxCopies copies were sent; attempt i ends lat[i] after its
// start with out[i]. It returns the attempt whose result is returned, when,
// and how many attempts started; ok is false if two attempts end at once,
// an order the model does not decide.
func hedgeModel(delay time.Duration, maxCopies int, lat []time.Duration, out []hedgeOutcome) (id int, at time.Duration, started int, ok bool) {
	type attempt struct{ end time.Duration }
	var atts []attempt
	atts = append(atts, attempt{lat[0]})
	running := map[int]bool{0: true}
	final, last := -1, -1
	firstDone := false
	nextFire := delay
	for {
		// The next event: the earliest end of a running attempt, or the
		// timer (ends are at odd milliseconds, fires at even ones: never at once).
		next, who := time.Duration(1<<62), -1
		for i := range running {
			if atts[i].end < next {
				next, who = atts[i].end, i
			}
		}
		for i := range running {
			if i != who && atts[i].end == next {
				return 0, 0, 0, false
			}
		}
		copies := len(atts) - 1
		if copies < maxCopies && nextFire < next {
			k := len(atts)
			atts = append(atts, attempt{nextFire + lat[k]})
			running[k] = true
			nextFire += delay
			continue
		}
		delete(running, who)
		inflight := len(running)
		if who == 0 {
			firstDone = true
			if out[0] != outFailure {
				return 0, next, len(atts), true
			}
			last = 0
			if inflight == 0 {
				return 0, next, len(atts), true
			}
			continue
		}
		switch {
		case out[who] != outFailure && out[who] != outGoexit:
			final = who
		default:
			last = who
		}
		if final >= 0 {
			// The others are cancelled: the first returns now, and the
			// call is decided, with the copy's result.
			return final, next, len(atts), true
		}
		if firstDone && inflight == 0 {
			return last, next, len(atts), true
		}
	}
}

// FuzzDoHedged checks DoHedged against hedgeModel: which attempt's result
// is returned, when, and how many attempts were made, for delays, limits,
// latencies and outcomes drawn from the input.
func FuzzDoHedged(f *testing.F) {
	f.Add([]byte{0, 0, 10, 0, 1, 0})
	f.Add([]byte{1, 2, 30, 1, 3, 0, 2, 2, 0, 1})
	f.Add([]byte{0, 3, 5, 1, 7, 2, 1, 0, 9, 1, 2, 0})
	f.Add([]byte{3, 1, 15, 1, 15, 1, 1, 1})
	f.Add([]byte{0, 2, 9, 1, 1, 3, 3, 0})  // a copy calls runtime.Goexit, the first fails last
	f.Add([]byte{0, 1, 3, 1, 0, 3})        // a copy calls runtime.Goexit after the first failed
	f.Add([]byte{1, 3, 20, 0, 1, 3, 5, 2}) // Goexit, then a Permanent failure
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < 4 {
			return
		}
		delay := time.Duration(2*(1+int(data[0])%4)) * time.Millisecond
		maxHedges := int(data[1]) % 4
		maxCopies := max(maxHedges, 1)
		// At most 5 attempts: the first, 3 copies, and one never started.
		var lat []time.Duration
		var out []hedgeOutcome
		for i := 2; i+1 < len(data) && len(lat) < 5; i += 2 {
			lat = append(lat, time.Duration(2*(int(data[i])%16)+1)*time.Millisecond)
			o := hedgeOutcome(int(data[i+1]) % 4)
			if o == outGoexit && len(out) == 0 {
				// The first attempt runs in the caller's goroutine,
				// which runtime.Goexit would end.
				o = outFailure
			}
			out = append(out, o)
		}
		for len(lat) < maxCopies+1 {
			// Attempts the input does not describe answer late.
			lat = append(lat, 31*time.Millisecond)
			out = append(out, outSuccess)
		}
		want, wantAt, wantStarted, ok := hedgeModel(delay, maxCopies, lat, out)
		if !ok {
			return
		}
		synctest.Test(t, func(t *testing.T) {
			var n atomic.Int32
			fn := func(ctx context.Context) (int, error) {
				id := int(n.Add(1)) - 1
				if id >= len(lat) {
					t.Errorf("attempt %d started; the model has %d", id, len(lat))
					return 0, errors.New("too many")
				}
				select {
				case <-time.After(lat[id]):
				case <-ctx.Done():
					return -100, ctx.Err()
				}
				switch out[id] {
				case outSuccess:
					return id + 1, nil
				case outFailure:
					return -(id + 1), attemptError{id}
				case outGoexit:
					runtime.Goexit()
				}
				return -(id + 1), retry.Permanent(attemptError{id})
			}
			start := time.Now()
			h := retry.Hedge{Delay: delay, MaxHedges: maxHedges, Budget: plenty()}
			v, err := retry.DoHedged(t.Context(), h, fn)
			took := time.Since(start)
			var ae attemptError
			switch {
			case out[want] == outSuccess && (err != nil || v != want+1):
				t.Fatalf("DoHedged = %d, %v; want attempt %d's success", v, err, want)
			case out[want] == outGoexit && (!errors.Is(err, ctxsync.ErrGoexit) || v != 0):
				t.Fatalf("DoHedged = %d, %v; want attempt %d's runtime.Goexit, as ctxsync.ErrGoexit", v, err, want)
			case out[want] != outSuccess && out[want] != outGoexit && (!errors.As(err, &ae) || ae.id != want || v != -(want+1)):
				t.Fatalf("DoHedged = %d, %v; want attempt %d's failure", v, err, want)
			case took != wantAt:
				t.Fatalf("DoHedged took %v, want %v", took, wantAt)
			}
			synctest.Wait()
			if got := int(n.Load()); got != wantStarted {
				t.Fatalf("%d attempts started, want %d", got, wantStarted)
			}
		})
	})
}
