// Package nocopy provides NoCopy, which marks a struct that must not be copied
// after first use.
package nocopy

// NoCopy may be embedded, as a blank field, in a struct that must not be
// copied after first use: go vet's copylocks check reports a copy of any
// struct that contains it.
type NoCopy struct{}

// Lock is a no-op used by go vet's copylocks check.
func (*NoCopy) Lock() {}

// Unlock is a no-op used by go vet's copylocks check.
func (*NoCopy) Unlock() {}
