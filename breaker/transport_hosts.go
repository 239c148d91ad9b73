package breaker

import (
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
)

// hostSet holds the breakers of a Transport, one per key, at most MaxHosts.
//
// Lookups go through a sync.Map, which costs a request to a known host no
// lock and no write to memory that other cores share, so that requests to one
// busy host from many goroutines do not contend. Insertions and removals take
// mu, and keep all, a slice of the entries to draw samples from.
type hostSet struct {
	m sync.Map // key -> *hostEntry; changed only with mu held

	// tick counts the insertions: the clock that recency is measured on.
	// A host's breaker is dropped for its lack of use while new hosts came,
	// not while time passed, so that a lookup reads no clock.
	tick atomic.Uint64

	mu  sync.Mutex
	all []*hostEntry // guarded by mu
}

type hostEntry struct {
	key  string
	b    *Breaker
	used atomic.Uint64 // tick at the last request
	idx  int           // in hostSet.all; guarded by hostSet.mu
}

// hostSample is how many entries a drop looks at: enough to find one of the
// least recently used, at a cost that does not grow with the number held.
const hostSample = 8

// breaker returns the breaker of key, marked used, and makes it if it does
// not exist and make is set; else nil.
func (t *Transport) breaker(key string, make bool) *Breaker {
	h := &t.hosts
	if v, ok := h.m.Load(key); ok {
		e := v.(*hostEntry)
		if make {
			if tick := h.tick.Load(); e.used.Load() != tick { // a load, not a store, in the common case
				e.used.Store(tick)
			}
		}
		return e.b
	}
	if !make {
		return nil
	}
	return t.insert(key)
}

// insert makes the breaker of key, dropping others if the cap is reached.
// The breaker is made before the lock is taken: New panics on bad Settings,
// and then nothing has changed.
func (t *Transport) insert(key string) *Breaker {
	maxHosts := t.MaxHosts
	if maxHosts < 0 {
		panic("breaker: Transport with negative MaxHosts " + strconv.Itoa(maxHosts))
	}
	if maxHosts == 0 {
		maxHosts = defaultMaxHosts
	}
	s := t.Settings
	if s.Name != "" {
		s.Name += " " + key
	} else {
		s.Name = key
	}
	if each := t.OnStateChange; each != nil {
		own := s.OnStateChange
		s.OnStateChange = func(from, to State, c Counts) {
			if own != nil {
				// Deferred: both are user hooks, and own panicking (or
				// calling runtime.Goexit) must not keep the change from
				// each. Its panic goes on after, unless each panics too.
				defer each(key, from, to, c)
				own(from, to, c)
				return
			}
			each(key, from, to, c)
		}
	}
	b := New(s)

	h := &t.hosts
	h.mu.Lock()
	defer h.mu.Unlock()
	if v, ok := h.m.Load(key); ok {
		return v.(*hostEntry).b // another goroutine made it first
	}
	for len(h.all) >= maxHosts {
		h.dropLocked()
	}
	e := &hostEntry{key: key, b: b, idx: len(h.all)}
	e.used.Store(h.tick.Add(1))
	h.all = append(h.all, e)
	h.m.Store(key, e)
	return b
}

// dropLocked removes one entry: of a sample (every entry, when they are few),
// a closed breaker rather than an open or half-open one, whose state keeps a
// failing host from being hit, and one of those rather than a breaker forced
// open, which its user set to refuse everything until Reset (and which is
// least used for that very reason); then the least recently used. h.mu must
// be held, and h.all must not be empty.
func (h *hostSet) dropLocked() {
	var victim *hostEntry
	victimKeep := 0
	consider := func(e *hostEntry) {
		// How much the breaker's state is worth keeping: 0 closed, 1 open
		// or half-open, 2 forced open. Read without the breaker's lock:
		// a state that changes meanwhile makes a worse choice, no harm.
		keep := 0
		switch State(e.b.state.Load() & stateMask) {
		case Open:
			keep = 1
			if e.b.openErr.Load().Forced {
				keep = 2
			}
		case HalfOpen:
			keep = 1
		}
		switch {
		case victim == nil,
			keep < victimKeep,
			keep == victimKeep && e.used.Load() < victim.used.Load():
			victim, victimKeep = e, keep
		}
	}
	if len(h.all) <= hostSample {
		for _, e := range h.all {
			consider(e)
		}
	} else {
		for range hostSample {
			consider(h.all[rand.IntN(len(h.all))])
		}
	}
	h.m.Delete(victim.key)
	last := len(h.all) - 1
	h.all[victim.idx] = h.all[last]
	h.all[victim.idx].idx = victim.idx
	h.all[last] = nil
	h.all = h.all[:last]
}
