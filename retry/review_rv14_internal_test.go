package retry

import (
	"errors"
	"fmt"
	"testing"

	"github.com/ctxsync/ctxsync/internal/closed"
)

// rv14AsError has an As method that matches nothing, and wraps err.
type rv14AsError struct{ err error }

func (e rv14AsError) Error() string { return "as: " + e.err.Error() }
func (e rv14AsError) As(any) bool   { return false }
func (e rv14AsError) Unwrap() error { return e.err }

// TestRV14_PermanentLooksOnceIntoTrees pins a cost the shared closed type
// brought: to tell whether an error tree (errors.Join, fmt.Errorf with two
// %w, an error with an As method) holds a Permanent mark or a closed
// sentinel, isPermanent called errors.As twice, one allocation each (its
// target escapes), so that every failed attempt whose error is such a tree
// cost one allocation more than before the closed sentinels were known
// (errors.Is, which found them then, allocates nothing). Right: one look
// into the tree, at most one allocation, and the same answers.
func TestRV14_PermanentLooksOnceIntoTrees(t *testing.T) {
	other := errors.New("other")
	closedErr := closed.New("closed")
	for _, c := range []struct {
		err  error
		want bool
	}{
		{errors.Join(other, other), false},
		{errors.Join(other, closedErr), true},
		{errors.Join(other, Permanent(other)), true},
		{fmt.Errorf("%w, %w", other, fmt.Errorf("w: %w", closedErr)), true},
		{rv14AsError{other}, false},
		{rv14AsError{closedErr}, true},
		{rv14AsError{Permanent(other)}, true},
		{fmt.Errorf("w: %w", rv14AsError{errors.Join(other, closedErr)}), true},
	} {
		if got := isPermanent(c.err); got != c.want {
			t.Errorf("isPermanent(%q) = %v, want %v", c.err, got, c.want)
		}
		if n := testing.AllocsPerRun(100, func() { _ = isPermanent(c.err) }); n > 1 {
			t.Errorf("isPermanent(%q) allocates %v times, want at most 1", c.err, n)
		}
	}
}
