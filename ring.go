package ctxsync

import "sync/atomic"

// ring is the Queue's store: a FIFO ring buffer whose length is a power of two
// (or 0). It shrinks by half when a pop leaves it a quarter full, down to
// storeMinShrink, so that a burst does not pin its memory for the life of the
// queue.
//
// Producers own tail and consumers head, each under its own lock. Both count
// from the first item ever pushed, so that an item's slot is its number masked
// by the length, and they tell each side what the other did: a slot is
// written before tail counts it, and emptied before head lets it go. Each side
// keeps the last value it saw of the other's counter, and reads the counter
// itself only when that value says the ring is empty (or full): while items
// flow, neither side touches the other's cache line.
type ring[T any] struct {
	buf []T // replaced only with both sides held
	_   [64]byte

	head     atomic.Uint64 // items ever popped, less those put back; consumers'
	tailSeen uint64        // a value tail had, which head never passes; consumers'
	_        [64]byte

	tail     atomic.Uint64 // items ever pushed; producers'
	headSeen uint64        // a value head had, at or behind it; producers'
	_        [64]byte
}

// len returns the number of items at the moment of the call. Either side may
// call it, or neither.
func (r *ring[T]) len() int64 {
	for {
		// The count when tail was read: head was the same before and after.
		h := r.head.Load()
		t := r.tail.Load()
		if r.head.Load() == h {
			return int64(t - h)
		}
	}
}

// hasItem reports whether the ring holds an item for the consumers' side to
// pop.
func (r *ring[T]) hasItem() bool {
	h := r.head.Load()
	if h < r.tailSeen {
		return true
	}
	r.tailSeen = r.tail.Load()
	return h < r.tailSeen
}

// holdsAtLeast reports whether the ring holds limit items or more, as the
// producers' side sees it: exactly, when it does.
func (r *ring[T]) holdsAtLeast(limit int64) bool {
	t := r.tail.Load()
	if int64(t-r.headSeen) < limit {
		return false
	}
	r.headSeen = r.head.Load()
	return int64(t-r.headSeen) >= limit
}

// full reports whether a push must grow the ring first. Producers' side.
func (r *ring[T]) full() bool { return r.holdsAtLeast(int64(len(r.buf))) }

// push adds v at the back. The caller is the producers' side, and the ring
// must not be full: grow it first, with both sides held.
func (r *ring[T]) push(v T) {
	t := r.tail.Load()
	r.buf[t&uint64(len(r.buf)-1)] = v
	r.tail.Store(t + 1)
}

// pop removes the front item, which is there (see hasItem), and returns it
// with a count of the items left, which may fall short of the truth. The
// caller is the consumers' side.
func (r *ring[T]) pop() (T, int64) {
	var zero T
	h := r.head.Load()
	i := h & uint64(len(r.buf)-1)
	v := r.buf[i]
	r.buf[i] = zero // drop the reference for the garbage collector
	r.head.Store(h + 1)
	return v, int64(r.tailSeen - h - 1)
}

// shrinkable reports whether the ring, holding about n items, may be a quarter
// full or less, and is larger than storeMinShrink: then shrink may halve it.
func (r *ring[T]) shrinkable(n int64) bool {
	return len(r.buf) > storeMinShrink && n <= int64(len(r.buf)/4)
}

// grow and shrink resize the ring. The caller holds both sides. Shrink does
// nothing unless the ring is a quarter full or less.
func (r *ring[T]) grow() { r.resize(max(8, 2*len(r.buf))) }

func (r *ring[T]) shrink() {
	if r.shrinkable(r.len()) {
		r.resize(len(r.buf) / 2)
	}
}

// fit shrinks the ring to the size that pops would have left it at, had each
// been free to shrink it: halved while it is a quarter full or less, down to
// storeMinShrink. One resize, however many halvings. The caller holds both
// sides.
func (r *ring[T]) fit() {
	n, size := r.len(), len(r.buf)
	for size > storeMinShrink && n <= int64(size/4) {
		size /= 2
	}
	if size != len(r.buf) {
		r.resize(size)
	}
}

func (r *ring[T]) resize(size int) {
	buf := make([]T, size)
	h, t := r.head.Load(), r.tail.Load()
	for i := h; i != t; i++ {
		buf[i&uint64(size-1)] = r.buf[i&uint64(len(r.buf)-1)]
	}
	r.buf = buf
}
