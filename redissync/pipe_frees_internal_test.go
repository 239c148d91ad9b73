package redissync

import (
	"slices"
	"testing"
)

// TestFreesFirst: a pipeline sends its releases first, then its other
// scripts, each in the order they were queued.
func TestFreesFirst(t *testing.T) {
	acquire, release := &call{}, &call{frees: true}
	var batch, want []*op
	for i, kind := range "aaraarrar" {
		c := acquire
		if kind == 'r' {
			c = release
		}
		batch = append(batch, &op{c: c, v: i})
	}
	for _, pass := range []bool{true, false} {
		for _, o := range batch {
			if o.c.frees == pass {
				want = append(want, o)
			}
		}
	}
	freesFirst(batch)
	if !slices.Equal(batch, want) {
		got := make([]any, len(batch))
		for i, o := range batch {
			got[i] = o.v
		}
		t.Errorf("order %v; want the releases 2 5 6 8, then 0 1 3 4 7", got)
	}
	if allocs := testing.AllocsPerRun(100, func() { freesFirst(batch) }); allocs != 0 {
		t.Errorf("%v allocations; want 0", allocs)
	}
}
