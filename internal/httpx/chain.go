package httpx

import (
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"slices"
)

// MaxChain bounds how many of the library's Transports CheckChain follows,
// one the Base of the next: past it, their Bases most likely lead back to
// one of them, and RoundTrip would go round them until the stack ran out.
const MaxChain = 64

// A Link reads one of the library's Transport types: if rt is one, and not
// a nil pointer, its Base. It allocates nothing: every RoundTrip of the
// library's Transports walks the chain of Bases under it (see RefuseLoop).
type Link func(rt http.RoundTripper) (base http.RoundTripper, ok bool)

// A link is a registered Transport type: its package's name, how to read
// its Base, and the check of its own configuration (not its
// Base's), which returns the mistake RoundTrip would panic with.
type link struct {
	pkg  string
	base Link
	own  func(rt http.RoundTripper) error
}

// links are the Transport types of the library's packages, registered by
// their init functions, which run one after another before main: never
// written after that.
var links []link

// RegisterTransport tells CheckChain and ChainOver how to read the
// Transport type P of the package pkg: base returns a Transport's Base, own
// checks its own fields. Neither is called with a nil P. Call it from the
// package's init function only.
func RegisterTransport[P interface {
	*T
	http.RoundTripper
}, T any](pkg string, base func(P) http.RoundTripper, own func(P) error) {
	links = append(links, link{
		pkg: pkg,
		base: func(rt http.RoundTripper) (http.RoundTripper, bool) {
			if t, ok := rt.(P); ok && t != nil {
				return base(t), true
			}
			return nil, false
		},
		own: func(rt http.RoundTripper) error { return own(rt.(P)) },
	})
}

// precheckThrough, if set, is adaptive's: see PrecheckThrough.
var precheckThrough Link

// RegisterPrecheckThrough tells PrecheckThrough how to read the one
// Transport type of the library whose Precheck asks its Base's Precheck
// and, as that Base is a Transport of ratelimit, may panic with that
// Transport's mistake: adaptive's. Call it from the package's init
// function only.
func RegisterPrecheckThrough(l Link) { precheckThrough = l }

// PrecheckThrough reports whether the Precheck of rt asks the Precheck of
// its Base, which it returns: rt is an adaptive.Transport that has no
// mistake of its own. ratelimit.Transport's Check follows it, as its
// RoundTrip's Precheck does, to name first a mistake that panics there.
func PrecheckThrough(rt http.RoundTripper) (base http.RoundTripper, ok bool) {
	if precheckThrough == nil {
		return nil, false
	}
	return precheckThrough(rt)
}

// CheckChain checks base, the Base of a Transport of the package pkg that
// is the depth-th of the library's Transports down a chain (1 for one that
// no Transport of the library wraps), and every
// Base under it, in the order RoundTrip reaches them: each of the library's
// Transports by its own check, then its Base; the first RoundTripper that is
// not one of them, if it has a method Check() error, by that method, whose
// error is returned as it is. A nil base ends the chain (http.DefaultTransport
// is used). It returns the first mistake found, or nil.
//
// A Base that is nil but for its type (a nil pointer, func, map...: see
// IsNil) is a mistake, since RoundTrip would panic inside it, named by the
// package of the Transport whose Base it is; so is a
// chain of more than MaxChain of the library's Transports, named by pkg, as
// the RoundTrip of the Transport of pkg panics on it (see RefuseLoop).
func CheckChain(pkg string, base http.RoundTripper, depth int) error {
	top := pkg // the RoundTrip that panics on a loop: see RefuseLoop
	if ChainOver(base, depth) {
		// Before any Transport's own check: the RoundTrip of pkg's
		// Transport panics on the loop before it does anything else.
		return errors.New(Nesting(top))
	}
	for ; base != nil; depth++ {
		if msg := NilBase(pkg, base); msg != "" {
			return errors.New(msg) // as RefuseLoop panics
		}
		l, next, ok := lookup(base)
		if !ok {
			if c, ok := base.(interface{ Check() error }); ok {
				return c.Check()
			}
			return nil
		}
		if depth >= MaxChain {
			return errors.New(Nesting(top))
		}
		if err := l.own(base); err != nil {
			return err
		}
		pkg, base = l.pkg, next
	}
	return nil
}

// lookup returns the registered type of rt, and its Base, if rt is one of
// the library's Transports and not a nil pointer. A call to each Link, a
// type assertion, until one says ok: a RoundTrip walks the chain for every
// request.
func lookup(rt http.RoundTripper) (l *link, base http.RoundTripper, ok bool) {
	for i := range links {
		if base, ok = links[i].base(rt); ok {
			return &links[i], base, true
		}
	}
	return nil, nil, false
}

// ChainOver reports whether base, the Base of the depth-th of the library's
// Transports down a chain, leads on through more of them than MaxChain in
// all: their Bases most likely lead back to one of them. It walks as
// CheckChain does, but checks nothing else, and stops at the first Base
// that is not one of the library's Transports (or is nil: see IsNil). A
// Transport whose RoundTrip would follow such a loop round until the stack
// overflowed panics instead when this reports true.
func ChainOver(base http.RoundTripper, depth int) bool {
	for ; base != nil; depth++ {
		if _, ok := base.(*http.Transport); ok {
			return false // the usual end of a chain
		}
		_, next, ok := lookup(base) // false for a nil pointer
		if !ok {
			return false
		}
		if depth >= MaxChain {
			return true
		}
		base = next
	}
	return false
}

// Nesting is the error of a Check, and the panic of a RoundTrip, of a
// Transport of the package pkg over a chain of more than MaxChain of the
// library's Transports.
func Nesting(pkg string) string {
	return fmt.Sprintf("%s: Transports nested over %d deep; do their Bases lead back to one of them?", pkg, MaxChain)
}

// RefuseLoop is for the RoundTrip of a Transport of the package pkg whose
// Base is base, before it takes or sends anything: it closes req's body and
// panics with CheckChain's message for the two mistakes of the chain that
// RoundTrip would otherwise meet only inside a Base, after taking its own
// (a host's breaker, a Ticket): base leads on through more than MaxChain of
// the library's Transports (see ChainOver), round which RoundTrip would go
// until the stack overflowed, which ends the program; or base is nil but
// for its type (see IsNil), which would panic with a nil dereference. It
// costs a walk down the chain of the library's Transports under base.
func RefuseLoop(pkg string, base http.RoundTripper, req *http.Request) {
	if t, ok := base.(*http.Transport); ok && t != nil {
		return // the usual end of a chain: neither a loop nor nil
	}
	if ChainOver(base, 1) {
		CloseBody(req)
		panic(Nesting(pkg))
	}
	if msg := NilBase(pkg, base); msg != "" {
		CloseBody(req)
		panic(msg)
	}
}

// NilBase returns the mistake of a Transport of the package pkg whose Base
// is nil but for its type (see IsNil), as CheckChain names it and
// RefuseLoop panics with; or "" if base is nil itself (http.DefaultTransport
// is used) or is not nil.
func NilBase(pkg string, base http.RoundTripper) string {
	if base != nil && IsNil(base) {
		return fmt.Sprintf("%s: Transport with a nil %T as Base", pkg, base)
	}
	return ""
}

// IsNil reports whether v is nil, or holds a nil pointer, map, slice, func,
// channel or interface: a Base, or a limiter, that would fail only at its
// first use.
func IsNil(v any) bool {
	if v == nil {
		return true
	}
	switch rv := reflect.ValueOf(v); rv.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Func, reflect.Chan, reflect.Interface, reflect.UnsafePointer:
		return rv.IsNil()
	}
	return false
}

// Mistakes returns the messages that the library's Transports down the
// chain from base, the Base of a Transport of the package pkg, panic with
// for the mistakes of their configuration that Check names (a nil Base, a
// loop, the fields of each), or nil if they have none. It walks as
// CheckChain does, but on to the end of the chain of the library's
// Transports, and asks no Base of the user's: a Transport over base that has
// recovered a panic from it tells by this whether the panic is such a
// mistake (every request meets it, before anything is sent), not a failure
// of the host or of a function of the user's. For that path only: it
// allocates, and a Transport's own check may ask a limiter's Check (code of
// the user's), whose panic, or its error's Error's, is taken as no mistake
// found there.
func Mistakes(pkg string, base http.RoundTripper) []string {
	var ms []string
	for depth := 1; base != nil; depth++ {
		if msg := NilBase(pkg, base); msg != "" {
			return append(ms, msg)
		}
		l, next, ok := lookup(base)
		if !ok {
			return ms
		}
		if depth > MaxChain {
			// A loop: whichever Transport of it meets it first panics
			// with its package's name.
			for i := range links {
				ms = append(ms, Nesting(links[i].pkg))
			}
			return ms
		}
		if msg := ownCheck(l, base); msg != "" {
			ms = append(ms, msg)
		}
		pkg, base = l.pkg, next
	}
	return ms
}

// ownCheck is the message of l's check of rt's own fields, or "" if it
// finds nothing, or panics: the check may ask a limiter's Check, and the
// Error of what that returns, both code of the user's.
func ownCheck(l *link, rt http.RoundTripper) (msg string) {
	defer func() {
		if recover() != nil {
			msg = ""
		}
	}()
	if err := l.own(rt); err != nil {
		return err.Error()
	}
	return ""
}

// IsMistake reports whether v, the value a Base panicked with, is one of
// ms, the mistakes Mistakes found under the Transport: the message itself,
// as the library's Transports panic with it.
func IsMistake(v any, ms []string) bool {
	s, ok := v.(string)
	return ok && slices.Contains(ms, s)
}
