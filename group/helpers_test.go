package group_test

import (
	"context"
	"iter"
)

func double(_ context.Context, x int) (int, error) { return 2 * x, nil }

func nopItem(context.Context, int) error { return nil }

// count yields 0, 1, ..., n-1.
func count(n int) iter.Seq[int] {
	return func(yield func(int) bool) {
		for i := range n {
			if !yield(i) {
				return
			}
		}
	}
}
