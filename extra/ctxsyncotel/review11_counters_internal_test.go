package ctxsyncotel

import "testing"

// TestReview11CountersReadsOutOfOrder: two collections read the source in
// one order and report in the other. The older read's smaller counts are
// no reset: the counter stays at the newer read's, and counts nothing
// twice.
func TestReview11CountersReadsOutOfOrder(t *testing.T) {
	var by countersByName
	c := by.of("b", 1)
	read := func(seq uint64, n int64) int64 {
		v := []int64{n}
		c.apply(seq, v)
		return v[0]
	}
	older, newer := c.start(), c.start()
	if got := read(newer, 5); got != 5 {
		t.Fatalf("newer read of 5: %d, want 5", got)
	}
	if got := read(older, 3); got != 5 {
		t.Errorf("older read of 3 after the newer: %d, want 5", got)
	}
	if got := read(c.start(), 6); got != 6 {
		t.Errorf("next read of 6: %d, want 6 (none counted twice)", got)
	}
	if got := read(c.start(), 1); got != 7 {
		t.Errorf("read of 1 after a reset: %d, want 7", got)
	}
}

// TestReview11CountersSourceIdentity: a new source's counts add to those
// counted; the same source observed again carries on; a source that is not
// a pointer is taken for the same one.
func TestReview11CountersSourceIdentity(t *testing.T) {
	var by countersByName
	c := by.of("p", 1)
	read := func(n int64) int64 {
		v := []int64{n}
		c.apply(c.start(), v)
		return v[0]
	}
	a, b := new(int), new(int)
	c.observing(a)
	if got := read(4); got != 4 {
		t.Fatalf("first source, 4: %d", got)
	}
	c.observing(a)
	if got := read(6); got != 6 {
		t.Errorf("same source again, 6: %d, want 6", got)
	}
	c.observing(b)
	if got := read(9); got != 15 {
		t.Errorf("new source, 9: %d, want 6+9", got)
	}
	c.observing(struct{}{})
	if got := read(10); got != 16 {
		t.Errorf("a source that is not a pointer, 10: %d, want 16 (taken for the same)", got)
	}
	if by.of("p", 1) != c || by.of("q", 1) == c {
		t.Error("countersByName: one set per name")
	}
}
