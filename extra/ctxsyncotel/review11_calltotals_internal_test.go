package ctxsyncotel

import (
	"testing"

	"github.com/ctxsync/ctxsync/breaker"
)

// TestReview11CallTotalsReadsOutOfOrder: two collections read the breaker
// in one order and report in the other. The older read's smaller counts
// are no Reset: the counter stays at the newer read's, and counts nothing
// twice.
func TestReview11CallTotalsReadsOutOfOrder(t *testing.T) {
	var c callTotals
	older, newer := c.start(), c.start()
	if got := c.counts(newer, breaker.Counts{Failures: 5}); got[breaker.Failure] != 5 {
		t.Fatalf("newer read: failures %d, want 5", got[breaker.Failure])
	}
	if got := c.counts(older, breaker.Counts{Failures: 3}); got[breaker.Failure] != 5 {
		t.Errorf("older read after the newer: failures %d, want 5", got[breaker.Failure])
	}
	if got := c.counts(c.start(), breaker.Counts{Failures: 6}); got[breaker.Failure] != 6 {
		t.Errorf("next read of 6: failures %d, want 6 (none counted twice)", got[breaker.Failure])
	}
	if got := c.counts(c.start(), breaker.Counts{Failures: 1}); got[breaker.Failure] != 7 {
		t.Errorf("read of 1 after a Reset: failures %d, want 7", got[breaker.Failure])
	}
}
