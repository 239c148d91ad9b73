package ctxsyncotel

import (
	"maps"
	"sync"
	"sync/atomic"
)

// byName is what the metrics of a pool or breaker made with no name keep
// for each name their events and sources carry: the options of its
// attribute sets, made once, when the name is first seen, so that an event
// allocates nothing.
//
// The first name seen is held apart, so that the common case, metrics of
// one pool or one breaker, costs an event an atomic load and a comparison
// of two strings that share their bytes (the primitive passes the same Name
// every time), and no lock. Hooks shared by several (the breakers of a
// breaker.Transport, one per host) find the others in a map that is copied
// on each new name and read without a lock: names are few, and new ones
// rare.
type byName[V any] struct {
	first  atomic.Pointer[named[V]]
	others atomic.Pointer[map[string]V] // never changed once stored
	mu     sync.Mutex                   // serializes the making of entries
	make   func(name string) V          // checks name, and makes its entry
	// onFirst, if not nil, is called with the first entry once it is
	// stored, with mu held; what it returns, if not nil, is called once mu
	// is released: the part that runs the user's code (a Meter's Add).
	onFirst func(V) func()
}

type named[V any] struct {
	name string
	v    V
}

func (c *byName[V]) get(name string) V {
	if f := c.first.Load(); f != nil && f.name == name {
		return f.v
	}
	return c.slow(name)
}

// slow finds or makes the entry of a name other than the first.
func (c *byName[V]) slow(name string) V {
	if m := c.others.Load(); m != nil {
		if v, ok := (*m)[name]; ok {
			return v
		}
	}
	var after func()
	defer func() {
		// After the unlock below, deferred after it: the user's code
		// runs with no lock held, and may call back into the metrics.
		if after != nil {
			after()
		}
	}()
	c.mu.Lock()
	defer c.mu.Unlock() // make panics on a bad name: the cache stays as it was
	f := c.first.Load()
	if f != nil && f.name == name {
		return f.v // made by another goroutine meanwhile
	}
	old := c.others.Load()
	if old != nil {
		if v, ok := (*old)[name]; ok {
			return v
		}
	}
	v := c.make(name)
	if f == nil {
		c.first.Store(&named[V]{name, v})
		if c.onFirst != nil {
			after = c.onFirst(v)
		}
		return v
	}
	m := map[string]V{}
	if old != nil {
		m = maps.Clone(*old)
	}
	m[name] = v
	c.others.Store(&m)
	return v
}
