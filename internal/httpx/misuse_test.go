package httpx

import (
	"errors"
	"testing"
)

func TestMisuse(t *testing.T) {
	if err := Misuse(func() {}); err != nil {
		t.Fatalf("Misuse(no panic) = %v, want nil", err)
	}
	if err := Misuse(func() { panic("pkg: bad") }); err == nil || err.Error() != "pkg: bad" {
		t.Fatalf("Misuse(panic) = %v, want pkg: bad", err)
	}
	other := errors.New("not a message")
	defer func() {
		if r := recover(); r != other {
			t.Fatalf("a panic of another kind: recovered %v, want it to go on", r)
		}
	}()
	_ = Misuse(func() { panic(other) })
}
