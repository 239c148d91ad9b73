// Package clock is the clock of ctxsync's time-based packages: nanoseconds
// since an epoch, read from the monotonic clock alone.
//
// time.Now reads two clocks, wall and monotonic; time.Since of an epoch that
// has a monotonic reading reads only the monotonic one, for less than half the
// cost. That matters on the hot paths of a rate limiter or a circuit breaker,
// where one clock read costs more than the rest of the decision.
//
// Inside a testing/synctest bubble time.Since falls back to the bubble's
// virtual clock, so the packages run on virtual time there. The bubble's clock
// starts in 2000, long before the epoch, so readings there are far below
// zero: state kept from outside a bubble looks far in the future from inside
// it. Callers that keep times guard against that (see Jump).
package clock

import "time"

// epoch is the zero of the clock. One epoch for the whole process lets times
// read by one package be compared with times read by another.
var epoch = time.Now()

// Now reads the clock: nanoseconds since the epoch.
func Now() int64 { return int64(time.Since(epoch)) }

// At converts t to the clock's nanoseconds.
func At(t time.Time) int64 { return int64(t.Sub(epoch)) }

// Time converts nanoseconds of the clock to a time.Time.
func Time(ns int64) time.Time { return epoch.Add(time.Duration(ns)) }

// Jump is how far in the future kept state may seem before it is taken for
// state from another clock: kept outside a testing/synctest bubble and seen
// from inside one, whose clock starts in 2000. Real state is never ahead of
// now by more than what it was built to look ahead (the time to refill a
// bucket, an open breaker's timeout) plus how stale a goroutine's reading of
// now can be: far less than this.
const Jump = int64(time.Hour)
