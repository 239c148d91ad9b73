package ctxsync

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRingWraps checks the ring against a slice through pushes, pops and
// unpops that wrap around its end and make it grow, with the head anywhere.
func TestRingWraps(t *testing.T) {
	var r ring[int]
	var model []int
	next := 0
	check := func() {
		t.Helper()
		require.Equal(t, len(model), r.len())
		require.Zero(t, len(r.buf)&(len(r.buf)-1), "length %d is not a power of two", len(r.buf))
	}
	for round := range 200 {
		switch round % 7 {
		case 0, 1, 2, 3: // more pushes than pops: the ring grows now and then
			r.push(next)
			model = append(model, next)
			next++
		case 4, 5:
			if len(model) > 0 {
				require.Equal(t, model[0], r.pop())
				model = model[1:]
			}
		case 6: // take one and hand it back: it keeps its place
			if len(model) > 0 {
				v := r.pop()
				r.unpop(v)
			} else {
				r.unpop(-1)
				model = append([]int{-1}, model...)
			}
		}
		check()
	}
	for len(model) > 0 {
		require.Equal(t, model[0], r.pop())
		model = model[1:]
	}
	check()
	r.unpop(42) // into an empty ring, head anywhere
	require.Equal(t, 42, r.pop())

	// An unpop into a full ring grows it, and the item still comes out first.
	for r.len() < len(r.buf) {
		r.push(r.len())
	}
	full := r.len()
	r.unpop(-1)
	require.Equal(t, -1, r.pop())
	for i := range full {
		require.Equal(t, i, r.pop())
	}
}
