package breaker

import (
	"sync/atomic"
	"unsafe"
)

// stripes is the number of cache lines a stripedCount spreads over: enough
// that goroutines on different cores rarely share one.
const stripes = 8

// A stripedCount is a counter that goroutines on many cores can add to
// without stealing one cache line from each other: each adds to the stripe
// its stack address picks, and a read sums them. The success count of a
// closed breaker is one: every successful call adds to it, and only Counts
// and failures read it.
//
// Adds are exact; a sum read while adds land is one of the values the count
// passed through or between, as any read of a running counter is.
type stripedCount struct {
	s [stripes]struct {
		n atomic.Int64
		_ [56]byte
	}
}

// stripe picks a stripe for the calling goroutine from the address of its
// stack, which differs between goroutines and stays put while one runs a
// call. Nothing is read through the address.
func stripe() int {
	var b byte
	p := uint64(uintptr(unsafe.Pointer(&b))) >> 10
	return int((p * 0x9e3779b97f4a7c15) >> 61) // the top 3 bits: 0 to stripes-1
}

func (c *stripedCount) Add(n int64) { c.s[stripe()].n.Add(n) }

func (c *stripedCount) Load() int64 {
	var sum int64
	for i := range c.s {
		sum += c.s[i].n.Load()
	}
	return sum
}

// Take sets the count to 0 and returns what it was. Each add that races with
// it lands either before (in the sum returned) or after (in the new count).
func (c *stripedCount) Take() int64 {
	var sum int64
	for i := range c.s {
		sum += c.s[i].n.Swap(0)
	}
	return sum
}
