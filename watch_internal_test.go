package ctxsync

import "fmt"

// WatchWaiting returns the number of goroutines counted as waiting on w's
// channel, for the tests of package ctxsync_test, and panics if the channel
// and the count disagree: a channel with nobody counted on it must have been
// dropped (see Watch.ch), or a Store from another bubble could touch it.
func WatchWaiting[T any](w *Watch[T]) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	if (w.ch == nil) != (w.holders == 0) || w.holders < 0 {
		panic(fmt.Sprintf("ctxsync: bug: Watch channel %v with %d holders", w.ch, w.holders))
	}
	return w.holders
}
