package retry

import (
	"context"
	"errors"
	"math"
	"testing"
	"testing/synctest"
	"time"
)

// fuzzMultipliers are the Multipliers FuzzExecute picks from.
var fuzzMultipliers = []float64{0, 1, 1.5, 2, 3, 10, 1e300, math.Inf(1)}

// FuzzExecute runs Execute without jitter on a script of outcomes, under a
// deadline and MaxElapsed or not, in virtual time, and checks the waits it
// makes, the attempts, the result and the time it took against a model.
//
// script holds 2 bits per attempt, from the lowest: 0 succeeds, 1 fails, 2
// fails for good (Permanent), 3 fails asking for a RetryAfter of raMs,
// which MaxRetryAfter (maxRAms) may refuse.
func FuzzExecute(f *testing.F) {
	f.Add(uint16(100), uint16(1000), uint8(3), int8(5), uint64(0b01_01_01), uint16(0), uint16(0), uint16(0), uint16(0))
	f.Add(uint16(10), uint16(50), uint8(0), int8(-1), uint64(0x5555), uint16(300), uint16(0), uint16(0), uint16(0))
	f.Add(uint16(10), uint16(50), uint8(4), int8(0), uint64(0b11_11_01), uint16(0), uint16(700), uint16(400), uint16(0))
	f.Add(uint16(0), uint16(0), uint8(6), int8(8), uint64(0b10_01_01), uint16(5000), uint16(2000), uint16(0), uint16(0))
	f.Add(uint16(10), uint16(50), uint8(0), int8(0), uint64(0b11_01), uint16(0), uint16(0), uint16(30000), uint16(0))    // beyond the default bound
	f.Add(uint16(10), uint16(50), uint8(0), int8(0), uint64(0b11_01), uint16(0), uint16(0), uint16(400), uint16(300))    // beyond an explicit one
	f.Add(uint16(10), uint16(20000), uint8(0), int8(0), uint64(0b11_01), uint16(0), uint16(0), uint16(15000), uint16(0)) // within MaxDelay
	f.Fuzz(func(t *testing.T, initialMs, maxMs uint16, mult uint8, attempts int8, script uint64, deadlineMs, elapsedMs, raMs, maxRAms uint16) {
		p := Policy{
			MaxAttempts:   max(int(attempts), -1),
			InitialDelay:  time.Duration(initialMs) * time.Millisecond,
			MaxDelay:      time.Duration(maxMs) * time.Millisecond,
			Multiplier:    fuzzMultipliers[int(mult)%len(fuzzMultipliers)],
			MaxElapsed:    time.Duration(elapsedMs) * time.Millisecond,
			MaxRetryAfter: time.Duration(maxRAms) * time.Millisecond,
			Jitter:        NoJitter,
		}
		deadline := time.Duration(deadlineMs) * time.Millisecond
		ra := time.Duration(raMs) * time.Millisecond
		if p.MaxAttempts == -1 && deadline == 0 && p.MaxElapsed == 0 {
			p.MaxAttempts = 40 // the script ends in failures: keep the run finite
		}

		// The model.
		outcome := func(n int) uint64 { // n from 1
			if n > 32 {
				return 1
			}
			return script >> (2 * (n - 1)) & 3
		}
		maxAttempts := p.MaxAttempts
		if maxAttempts == 0 {
			maxAttempts = 3
		}
		initial, maxDelay, m := p.InitialDelay, p.MaxDelay, p.Multiplier
		if initial == 0 {
			initial = 100 * time.Millisecond
		}
		if maxDelay == 0 {
			maxDelay = 10 * time.Second
		}
		if m == 0 {
			m = 2
		}
		maxRA := p.MaxRetryAfter
		if maxRA == 0 {
			maxRA = max(10*time.Second, p.MaxDelay)
		}
		var (
			wantWaits []time.Duration
			wantEnd   time.Duration
			wantR     Reason // 0: success
			wantN     int
			exp       = float64(min(initial, maxDelay))
		)
		for n := 1; ; n++ {
			o := outcome(n)
			if o == 0 {
				wantN = n
				break
			}
			if o == 2 {
				wantN, wantR = n, NotRetryable
				break
			}
			if maxAttempts > 0 && n >= maxAttempts {
				wantN, wantR = n, MaxAttemptsReached
				break
			}
			d := maxDelay
			if exp < math.MaxInt64 {
				d = min(time.Duration(exp), maxDelay)
			}
			exp = math.Min(exp*m, float64(maxDelay))
			if o == 3 && ra > d {
				d = ra
			}
			if deadline > 0 && wantEnd+d >= deadline {
				wantN, wantR = n, DeadlineReached
				break
			}
			if p.MaxElapsed > 0 && wantEnd+d >= p.MaxElapsed {
				wantN, wantR = n, MaxElapsedReached
				break
			}
			if o == 3 && ra > maxRA {
				wantN, wantR = n, MaxRetryAfterExceeded
				break
			}
			wantWaits = append(wantWaits, d)
			wantEnd += d
		}

		synctest.Test(t, func(t *testing.T) {
			ctx := context.Background()
			if deadline > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, deadline)
				defer cancel()
			}
			var waits []time.Duration
			p.OnRetry = func(_ int, _ error, d time.Duration) { waits = append(waits, d) }
			errs := []error{nil, errors.New("fail"), Permanent(errors.New("permanent")), &fuzzRA{ra}}
			n := 0
			start := time.Now()
			err := p.Execute(ctx, func(context.Context) error { n++; return errs[outcome(n)] })
			if took := time.Since(start); took != wantEnd {
				t.Fatalf("Execute took %v, want %v", took, wantEnd)
			}
			if len(waits) != len(wantWaits) {
				t.Fatalf("waits %v, want %v", waits, wantWaits)
			}
			for i := range waits {
				if waits[i] != wantWaits[i] {
					t.Fatalf("waits %v, want %v", waits, wantWaits)
				}
			}
			if n != wantN {
				t.Fatalf("%d attempts, want %d", n, wantN)
			}
			if wantR == 0 {
				if err != nil {
					t.Fatalf("Execute = %v, want nil", err)
				}
				return
			}
			var rerr *Error
			if !errors.As(err, &rerr) || rerr.Reason != wantR || rerr.Attempts != wantN || !errors.Is(err, errs[outcome(n)]) {
				t.Fatalf("Execute = %#v, want a *Error of %v after %d attempts", err, wantR, wantN)
			}
		})
	})
}

type fuzzRA struct{ d time.Duration }

func (e *fuzzRA) Error() string             { return "busy" }
func (e *fuzzRA) RetryAfter() time.Duration { return e.d }

// FuzzBackoffBounds: whatever the durations and Multiplier, every wait is
// within its jitter's bounds, and never negative or above MaxDelay.
func FuzzBackoffBounds(f *testing.F) {
	f.Add(int64(time.Millisecond), int64(time.Second), 2.0, uint8(0))
	f.Add(int64(math.MaxInt64), int64(math.MaxInt64), 1e300, uint8(2))
	f.Add(int64(1), int64(math.MaxInt64), math.Inf(1), uint8(1))
	f.Fuzz(func(t *testing.T, initial, maxDelay int64, mult float64, jitter uint8) {
		p := Policy{
			InitialDelay: time.Duration(max(initial, 0)),
			MaxDelay:     time.Duration(max(maxDelay, 0)),
			Multiplier:   mult,
			Jitter:       Jitter(jitter % 4),
		}
		if math.IsNaN(mult) || (mult != 0 && mult < 1) {
			p.Multiplier = 0
		}
		p.check()
		b := newBackoff(&p)
		exp, prev := min(toDuration(b.exp), b.maxDelay), b.initial
		for n := range 64 {
			d := b.next()
			lo, hi := time.Duration(0), exp
			switch p.Jitter {
			case EqualJitter:
				lo = exp - exp/2
			case DecorrelatedJitter:
				lo, hi = min(b.initial, b.maxDelay), min(max(scale(prev, 3), b.initial), b.maxDelay)
			case NoJitter:
				lo = exp
			}
			if d < lo || d > hi || d < 0 || d > b.maxDelay {
				t.Fatalf("%v: wait %d = %v, want within [%v, %v]", p.Jitter, n+1, d, lo, hi)
			}
			prev = d
			exp = min(toDuration(b.exp), b.maxDelay) // the next one
		}
	})
}
