package ctxsyncprom

import (
	"maps"
	"sync"
	"sync/atomic"
)

// byName is what hooks made with no name of their own (PoolHooks(""),
// BreakerOnCall("")) keep for each name their events carry: the series of
// that name, looked up once, when the name is first seen.
//
// The first name seen is held apart, so that the common case, hooks that
// serve one pool or one breaker, costs an event an atomic load and a
// comparison of two strings that share their bytes (the primitive passes
// the same Name every time), and no lock. Hooks shared by several (the
// breakers of a breaker.Transport, one per host) find the others in a map
// that is copied on each new name and read without a lock: names are few,
// and new ones rare.
type byName[V any] struct {
	first  atomic.Pointer[named[V]]
	others atomic.Pointer[map[string]V] // never changed once stored
	mu     sync.Mutex                   // serializes the making of entries
	make   func(name string) V          // checks name, and looks its series up
}

type named[V any] struct {
	name string
	v    V
}

// slow finds or makes the entry of a name other than the first. Callers
// look at the first themselves, in line, before calling it: a generic
// method is not inlined, and that look is every event's path.
func (c *byName[V]) slow(name string) V {
	if m := c.others.Load(); m != nil {
		if v, ok := (*m)[name]; ok {
			return v
		}
	}
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
