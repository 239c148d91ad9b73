package ctxsync

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRingWraps checks the ring against a slice through pushes and pops that
// wrap around its end and make it grow, with the head anywhere.
func TestRingWraps(t *testing.T) {
	var r ring[int]
	var model []int
	next := 0
	check := func() {
		t.Helper()
		require.EqualValues(t, len(model), r.len())
		require.Zero(t, len(r.buf)&(len(r.buf)-1), "length %d is not a power of two", len(r.buf))
	}
	for round := range 200 {
		switch round % 6 {
		case 0, 1, 2, 3: // more pushes than pops: the ring grows now and then
			pushed(&r, next)
			model = append(model, next)
			next++
		case 4, 5:
			if len(model) > 0 {
				require.Equal(t, model[0], popped(&r))
				model = model[1:]
			}
		}
		check()
	}
	for len(model) > 0 {
		require.Equal(t, model[0], popped(&r))
		model = model[1:]
	}
	check()
	pushed(&r, 42) // into an empty ring, head anywhere
	require.Equal(t, 42, popped(&r))

	// A push into a full ring grows it, and the order holds.
	for !r.full() {
		pushed(&r, int(r.len()))
	}
	full := int(r.len())
	pushed(&r, full)
	for i := range full + 1 {
		require.Equal(t, i, popped(&r))
	}
}

// pushed pushes v on r, as a Queue would, growing it when it must.
func pushed(r *ring[int], v int) {
	if r.full() {
		r.grow()
	}
	r.push(v)
}

// popped pops r, as a Queue would, shrinking it when it may.
func popped(r *ring[int]) int {
	if !r.hasItem() {
		panic("pop of an empty ring")
	}
	v, n := r.pop()
	if n < 0 || n > r.len() {
		panic("pop returned a count above the truth")
	}
	if r.shrinkable(n) {
		r.shrink()
	}
	return v
}

// TestStoresShrink: after a burst, the ring and the heap give their memory
// back as they drain, and keep their order while they do.
func TestStoresShrink(t *testing.T) {
	var r ring[int]
	var model []int
	pushed(&r, -1)
	popped(&r) // the head is off zero when the burst comes
	for i := range 10_000 {
		pushed(&r, i)
		model = append(model, i)
	}
	peak := len(r.buf)
	for step := 0; len(model) > 0; step++ {
		switch step % 10 {
		case 3: // now and then a push: the shrunk ring still wraps and grows
			pushed(&r, -step)
			model = append(model, -step)
		default:
			require.Equal(t, model[0], popped(&r))
			model = model[1:]
		}
		require.EqualValues(t, len(model), r.len())
		if len(r.buf) > storeMinShrink {
			require.Greater(t, int(r.len()), len(r.buf)/4-1, "a quarter full and not shrunk")
		}
	}
	require.Equal(t, storeMinShrink, len(r.buf), "from %d", peak)

	var h pheap[int]
	rnd := rand.New(rand.NewPCG(1, 2))
	for i := range 10_000 {
		h.push(pqItem[int]{prio: rnd.IntN(100), v: i})
	}
	prev := pqItem[int]{prio: -1}
	for h.len() > 0 {
		it := h.pop()
		require.True(t, less(&prev, &it), "%+v came out after %+v", it, prev)
		prev = it
		if cap(h.items) > storeMinShrink {
			require.Greater(t, h.len(), cap(h.items)/4, "a quarter full and not shrunk")
		}
	}
	require.LessOrEqual(t, cap(h.items), storeMinShrink)
}
