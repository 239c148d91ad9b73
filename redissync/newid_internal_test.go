package redissync

import (
	"math"
	"strconv"
	"sync/atomic"
	"testing"
)

// newID makes "prefix" + the count in base 36, in one allocation, up to the
// count's largest value.
func TestNewID(t *testing.T) {
	s := &Semaphore{idPrefix: "0123456789abcdef01234567/30000/", ids: new(atomic.Uint64)}
	for _, n := range []uint64{0, 1, 35, 36, 1 << 32, math.MaxUint64 - 1} {
		s.ids.Store(n)
		want := s.idPrefix + strconv.FormatUint(n+1, 36)
		if got := s.newID(); got != want {
			t.Errorf("newID after %d = %q; want %q", n, got, want)
		}
	}
	if raceOn {
		return // the race detector's allocations would count
	}
	s.ids.Store(1 << 40)
	if n := testing.AllocsPerRun(100, func() { _ = s.newID() }); n != 1 {
		t.Errorf("newID allocates %v times; want 1", n)
	}
}
