// Package keycheck compares and hashes the keys of the library's keyed types
// so that a key that cannot be compared panics in the library's words.
//
// A key of an interface type (any, or an interface of the user's) compiles
// with any value in it, but one that holds a slice, map or func panics at its
// first comparison or hash, in the runtime's words, which do not say which
// call was wrong. The keyed types compare or hash a key through this package,
// before they take any lock, so that such a key panics with a message naming
// the package and the method, and leaves the type as it was.
//
// The check costs a deferred recover, too much for the hot paths of keyed
// locks and limiters, so it is made only when the key type is an interface
// type. A struct key with an interface field that holds such a value still
// panics in the runtime's words, as early and as harmlessly.
package keycheck

import (
	"fmt"
	"hash/maphash"
)

// isInterface reports whether K is an interface type: the only type whose
// zero value, put in an interface, is nil.
func isInterface[K comparable]() bool {
	var zero K
	return any(zero) == nil
}

// Equal returns key == key: false for a NaN or a value holding one, which a
// map could never find again. If key cannot be compared it panics, with what
// (a package's name and a method, "ctxsync: Flight.Do") leading the message.
//
// Equal and Hash are small enough to be inlined, and their callers' keys of
// a type that is not an interface pay nothing more than the comparison or
// the hash: a function with a deferred call is never inlined, so the
// recover is in functions of their own, called for interface types only.
func Equal[K comparable](key K, what string) bool {
	if isInterface[K]() {
		return equalChecked(key, what)
	}
	return key == key
}

func equalChecked[K comparable](key K, what string) bool {
	defer raise(what)
	return key == key
}

// Hash returns the hash of key with seed. If key cannot be compared it
// panics, with what leading the message.
func Hash[K comparable](seed maphash.Seed, key K, what string) uint64 {
	if isInterface[K]() {
		return hashChecked(seed, key, what)
	}
	return maphash.Comparable(seed, key)
}

func hashChecked[K comparable](seed maphash.Seed, key K, what string) uint64 {
	defer raise(what)
	return maphash.Comparable(seed, key)
}

// raise, deferred, raises the panic of a key that cannot be compared again as
// a message led by what.
func raise(what string) {
	if p := recover(); p != nil {
		panic(fmt.Sprintf("%s with a key that cannot be compared (%v)", what, p))
	}
}
