package redissync

import (
	"testing"
	"testing/synctest"
	"time"
)

// TestReviewM10LateCapAcrossClocks: lateCap kept one instant, lateBy, for
// every waiter of a pipe, read on the clock of the first waiter to ask once
// a lost release reply was noted. lateWake's doc says the waiters time the
// late bytes "each on its own clock", so that a Release or a waiter in a
// testing/synctest bubble works with waiters outside it; but a bubble's
// clock starts in 2000, and its monotonic reading is no kin of the
// process's. When the first to ask is a waiter in a bubble, a waiter
// outside that asked after the note (its attempt may reach Redis before the
// late script, which then hands it a permit) finds lateBy in the past and
// sleeps its whole Poll (an hour here) with a permit held for it; the other
// way round, a waiter in a bubble finds lateBy decades ahead and is not
// bounded either. Right: every waiter that asks after a late release is
// noted sleeps at most a roundTrip (on its own clock) before asking again.
func TestReviewM10LateCapAcrossClocks(t *testing.T) {
	const rt = 100 * time.Millisecond
	t.Run("bubble first, then outside", func(t *testing.T) {
		s := &Semaphore{pipe: &pipe{}, roundTrip: rt, releaseCall: &call{frees: true}}
		s.lateWake(s.releaseCall)
		synctest.Test(t, func(t *testing.T) {
			var seen lateBound // this waiter's
			if got := s.lateCap(time.Hour, &seen); got > rt {
				t.Errorf("lateCap(1h) in a bubble = %v, want at most %v", got, rt)
			}
		})
		var seen lateBound // this waiter's
		if got := s.lateCap(time.Hour, &seen); got > rt {
			t.Errorf("lateCap(1h) outside, after a waiter in a bubble = %v, want at most %v", got, rt)
		}
	})
	t.Run("outside first, then bubble", func(t *testing.T) {
		s := &Semaphore{pipe: &pipe{}, roundTrip: rt, releaseCall: &call{frees: true}}
		s.lateWake(s.releaseCall)
		var seen lateBound // this waiter's
		if got := s.lateCap(time.Hour, &seen); got > rt {
			t.Errorf("lateCap(1h) outside = %v, want at most %v", got, rt)
		}
		synctest.Test(t, func(t *testing.T) {
			var seen lateBound // this waiter's
			if got := s.lateCap(time.Hour, &seen); got > rt {
				t.Errorf("lateCap(1h) in a bubble, after a waiter outside = %v, want at most %v", got, rt)
			}
			// Woken again within the bound (a wake-up that came as it
			// asked), the waiter is still bounded, by what is left.
			time.Sleep(rt / 4)
			if got := s.lateCap(time.Hour, &seen); got != rt-rt/4 {
				t.Errorf("lateCap(1h) a quarter of the bound later = %v, want %v", got, rt-rt/4)
			}
			time.Sleep(rt)
			if got := s.lateCap(time.Hour, &seen); got != time.Hour {
				t.Errorf("lateCap(1h) past the bound = %v, want 1h", got)
			}
		})
	})
}
