package ctxsync

import (
	"fmt"
	"hash/maphash"
)

// A key of an interface type (KeyedLock[any], Flight[any, V]) compiles with
// any value in it, but one that holds a slice, map or func panics at its first
// comparison or hash, in the runtime's words, which do not say which call was
// wrong. The methods that take a key compare or hash it through checkKey or
// hashKey, before any lock is taken, so that such a key panics with a message
// naming the package and the method, and leaves the primitive as it was.
//
// The check costs a deferred recover, too much for KeyedLock's hot path, so
// it is made only for an interface type K. A struct key with an interface
// field that holds such a value still panics in the runtime's words, as
// early and as harmlessly.

// isInterface reports whether K is an interface type: the only type whose
// zero value, put in an interface, is nil.
func isInterface[K comparable]() bool {
	var zero K
	return any(zero) == nil
}

// checkKey returns key == key: false for a NaN or a value holding one, which
// a map could never find again. It panics, naming what, if key cannot be
// compared.
func checkKey[K comparable](key K, what string) bool {
	if !isInterface[K]() {
		return key == key
	}
	defer keyPanic(what)
	return key == key
}

// hashKey returns the hash of key with seed. It panics, naming what, if key
// cannot be compared.
func hashKey[K comparable](seed maphash.Seed, key K, what string) uint64 {
	if !isInterface[K]() {
		return maphash.Comparable(seed, key)
	}
	defer keyPanic(what)
	return maphash.Comparable(seed, key)
}

// keyPanic, deferred, raises a panic of a key that cannot be compared again
// as a message naming what.
func keyPanic(what string) {
	if p := recover(); p != nil {
		panic(fmt.Sprintf("ctxsync: %s with a key that cannot be compared (%v)", what, p))
	}
}
