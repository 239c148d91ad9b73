package ctxsyncotel_test

import (
	"fmt"
	"runtime"
	"testing"
	"unsafe"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/ctxsync/ctxsync/extra/ctxsyncotel"
	"github.com/ctxsync/ctxsync/ratelimit"
)

// review11bTally is a LimiterSource of a size class with few objects to a
// span, so that the slot of one collected is soon handed to a new one.
type review11bTally struct {
	counts ratelimit.TallyCounts
	_      [3000]byte
}

func (s *review11bTally) Counts() ratelimit.TallyCounts { return s.counts }

// TestReview11bCountersNewSourceAtAFreedAddress pins a defect of the
// counters that keep LimiterMetrics' (and PoolMetrics', and
// ctxsync.breaker.calls') counters monotonic: they know a source by its
// address alone. A Tally observed, unregistered and garbage-collected, and
// a new one that the allocator puts at the same address (a Tally made anew
// on a reload), is taken for the same source carried on: its counts are not
// added to those counted, and every count it made up to the first's is lost
// (the counter went from 5 to 7 where the two Tallies counted 5 and 7). The
// right behaviour: a new source's counts add to those counted, wherever it
// is allocated; the identity of a source must not outlive it (a weak
// pointer's does not).
func TestReview11bCountersNewSourceAtAFreedAddress(t *testing.T) {
	r, opt := newProvider(t)
	// Each try has a name of its own; most find a slot used again.
	for try := range 20 {
		if review11bReuse(t, r, opt, fmt.Sprint("reuse-", try)) {
			return
		}
	}
	t.Skip("no new Tally was allocated at the address of the first")
}

// review11bReuse observes a Tally under name, ends the registration, lets
// the Tally be collected and observes a new one allocated at its address.
// It reports false if no new one was.
func review11bReuse(t *testing.T, r *sdkmetric.ManualReader, opt ctxsyncotel.Option, name string) bool {
	lm, err := ctxsyncotel.NewLimiterMetrics(name, opt)
	if err != nil {
		t.Fatal(err)
	}
	allowed := func() int64 {
		t.Helper()
		return collect(t, r).point(t, "ctxsync.ratelimit.decisions",
			attrString("ctxsync.ratelimit.name", name), attrString("ctxsync.ratelimit.decision", "allowed"))
	}
	var addr uintptr
	func() {
		first := &review11bTally{counts: ratelimit.TallyCounts{Allowed: 5}}
		reg, err := lm.Observe(first)
		if err != nil {
			t.Fatal(err)
		}
		if got := allowed(); got != 5 {
			t.Fatalf("first Tally: allowed %d, want 5", got)
		}
		if err := reg.Unregister(); err != nil {
			t.Fatal(err)
		}
		addr = uintptr(unsafe.Pointer(first))
	}()
	// Collect the first Tally and allocate until a new one takes its slot.
	var second *review11bTally
	var keep []*review11bTally
	for range 5 {
		runtime.GC()
		for range 200 {
			s := new(review11bTally)
			if uintptr(unsafe.Pointer(s)) == addr {
				second = s
				break
			}
			keep = append(keep, s)
		}
		if second != nil {
			break
		}
	}
	runtime.KeepAlive(keep)
	if second == nil {
		return false
	}
	second.counts.Allowed = 7
	reg, err := lm.Observe(second)
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Unregister()
	if got := allowed(); got != 5+7 {
		t.Errorf("a new Tally at the first's address, 7 allowed: the counter says %d, want 5+7", got)
	}
	return true
}
