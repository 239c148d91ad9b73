package ctxsync

import (
	"context"
	"runtime"
	"testing"
)

// TestFlightKeepsNothingPerKey: a finished call leaves nothing for its key:
// Len is zero, the map holds no entry, and a map that many keys grew is
// dropped once it empties, since a Go map does not shrink (memory follows
// the keys in flight, not every key seen).
func TestFlightKeepsNothingPerKey(t *testing.T) {
	var f Flight[int, int]
	fn := func(context.Context) (int, error) { return 1, nil }
	for i := range 1000 {
		if _, err, _ := f.Do(context.Background(), i, fn); err != nil {
			t.Fatal(err)
		}
	}
	if f.Len() != 0 || len(f.calls) != 0 {
		t.Fatalf("after 1000 calls: Len() = %d, %d keys in the map, want 0", f.Len(), len(f.calls))
	}

	// Many keys in flight at once grow the map; it is dropped when the last
	// call ends.
	release := make(chan struct{})
	done := make(chan struct{})
	const n = 2 * flightMapKeep
	for i := range n {
		go func() {
			f.Do(context.Background(), i, func(context.Context) (int, error) { <-release; return i, nil })
			done <- struct{}{}
		}()
	}
	for f.Len() < n {
		runtime.Gosched()
	}
	close(release)
	for range n {
		<-done
	}
	f.mu.Lock()
	calls, peak := f.calls, f.peak
	f.mu.Unlock()
	if calls != nil || peak != 0 {
		t.Fatalf("after %d keys at once: map %v (peak %d), want it dropped", n, calls, peak)
	}
}
