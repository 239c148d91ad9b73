package testutil

import (
	"strings"
	"testing"
)

// PanicOf returns what f panics with, or nil if it returns.
func PanicOf(f func()) (p any) {
	defer func() { p = recover() }()
	f()
	return nil
}

// RequirePanicPrefix checks that f panics with a string, a message of the
// library's, that begins with prefix.
func RequirePanicPrefix(t testing.TB, prefix string, f func()) {
	t.Helper()
	p := PanicOf(f)
	msg, ok := p.(string)
	if !ok {
		t.Fatalf("panicked with %T %v; want a message beginning %q", p, p, prefix)
	}
	if !strings.HasPrefix(msg, prefix) {
		t.Fatalf("panicked with %q; want a message beginning %q", msg, prefix)
	}
}
