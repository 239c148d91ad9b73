package retry

import (
	"math"
	"testing"
	"time"
)

func TestHedgeLatencySteps(t *testing.T) {
	var l hedgeLatency
	l.observe(true) // no estimate yet: nothing to move
	if d := l.delay(); d != 0 {
		t.Fatalf("delay before seeding = %v, want 0", d)
	}
	l.seed(time.Nanosecond)
	if d := l.delay(); d != hedgeMinDelay {
		t.Fatalf("seeded with 1ns: delay = %v, want the floor %v", d, hedgeMinDelay)
	}
	l.seed(time.Hour) // seeded already
	if d := l.delay(); d != hedgeMinDelay {
		t.Fatalf("second seed moved the delay to %v", d)
	}
	for range 1000 {
		l.observe(false)
	}
	if d := l.delay(); d != hedgeMinDelay {
		t.Fatalf("delay fell to %v, below the floor %v", d, hedgeMinDelay)
	}
	l.observe(true)
	if d, want := l.delay(), hedgeMinDelay+hedgeMinDelay/hedgeUp; d != want {
		t.Fatalf("after one attempt above: %v, want %v", d, want)
	}
}

// Near math.MaxInt64 the estimate saturates; it never wraps to a
// negative delay.
func TestHedgeLatencySaturates(t *testing.T) {
	var l hedgeLatency
	l.seed(time.Duration(math.MaxInt64 - 10))
	for range 100 {
		l.observe(true)
	}
	if d := l.delay(); d != time.Duration(math.MaxInt64) {
		t.Fatalf("delay = %v, want math.MaxInt64", d)
	}
	l.observe(false)
	if d := l.delay(); d <= 0 {
		t.Fatalf("delay = %v after a step down from the maximum", d)
	}
}
