package redissync

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
)

// model is what the scripts keep in Redis, kept in Go.
type model struct {
	n, lease, entry int64
	now             int64
	holders         map[string]int64 // id -> end of lease
	tokens          map[string]int64
	leases          map[string]int64 // the lease an id asks for, if not the caller's
	direct          map[string]bool  // granted by its own attempt: never asks again
	queue           []string
	qexp            map[string]int64
	seq             int64
}

func (m *model) sweep() {
	for id, end := range m.holders {
		if end <= m.now {
			delete(m.holders, id)
			delete(m.tokens, id)
		}
	}
	m.sweepLine()
}

func (m *model) sweepLine() {
	m.queue = slices.DeleteFunc(m.queue, func(id string) bool {
		if m.qexp[id] <= m.now {
			delete(m.qexp, id)
			return true
		}
		return false
	})
}

// handoff grants the free permits to the head of the line, each for the
// lease its id asks for; it returns the ids it granted.
func (m *model) handoff() map[string]bool {
	granted := map[string]bool{}
	for int64(len(m.holders)) < m.n && len(m.queue) > 0 {
		id := m.queue[0]
		m.queue = m.queue[1:]
		delete(m.qexp, id)
		m.seq++
		lease, ok := m.leases[id]
		if !ok {
			lease = m.lease
		}
		m.holders[id] = m.now + lease
		m.tokens[id] = m.seq
		granted[id] = true
	}
	return granted
}

// attempt returns the token of id's permit, or 0. A permit handed to id by
// an earlier script is answered with a new token.
func (m *model) attempt(id string, wait bool) int64 {
	m.sweep()
	granted := m.handoff()
	if _, ok := m.holders[id]; ok {
		if !granted[id] {
			// Claimed after a missed message: a new token, a whole lease.
			m.seq++
			m.tokens[id] = m.seq
			m.holders[id] = m.now + m.lease
		}
		return m.tokens[id]
	}
	if int64(len(m.holders)) < m.n && len(m.queue) == 0 {
		m.seq++
		m.holders[id] = m.now + m.lease
		m.tokens[id] = m.seq
		m.direct[id] = true
		return m.seq
	}
	if wait {
		if !slices.Contains(m.queue, id) {
			m.queue = append(m.queue, id)
		}
		m.qexp[id] = m.now + m.entry
	}
	return 0
}

func (m *model) release(id string) bool {
	m.sweep()
	_, held := m.holders[id]
	delete(m.holders, id)
	if i := slices.Index(m.queue, id); i >= 0 {
		m.queue = slices.Delete(m.queue, i, i+1)
		delete(m.qexp, id)
	}
	m.handoff()
	return held
}

func (m *model) renew(id string) bool {
	end, held := m.holders[id]
	if !held || end <= m.now {
		return false
	}
	m.holders[id] = m.now + m.lease
	return true
}

// FuzzScripts runs the scripts on miniredis, whose clock the test moves, and
// the model beside them: the grants, tokens, places in line and renewals
// agree, no more than N permits are held, and the free permits go to the
// head of the line, in order.
func FuzzScripts(f *testing.F) {
	f.Add(uint8(2), []byte{1, 0, 1, 1, 1, 2, 2, 0, 1, 1, 3, 40, 1, 2, 4, 1, 3, 90, 0, 3})
	f.Add(uint8(1), []byte{0, 0, 1, 1, 1, 2, 3, 70, 1, 1, 2, 0, 1, 2, 1, 1})
	// A lock (n%3 == 0): hand-overs for the waiters' own leases, renewals,
	// a line that lapses, leases that end by the key's expiry on the clock.
	f.Add(uint8(0), []byte{1, 0, 1, 3, 1, 4, 2, 0, 3, 40, 4, 3, 1, 4, 3, 50, 1, 4, 3, 55, 1, 4, 3, 99, 4, 4,
		1, 5, 2, 10, 3, 99, 4, 5, 3, 99, 3, 2, 2, 5, 1, 3, 1, 0, 3, 99, 3, 1, 0, 0})
	// A lock (N = 1) whose Release finds the head of the line lapsed and
	// hands the lock to the next.
	f.Add(uint8(0), []byte{1, 0, 1, 1, 1, 2, 3, 50, 1, 2, 3, 20, 2, 8, 0, 2, 2, 2})
	// A lock whose line a process of a longer Poll made (arg&16: far's
	// calls), handed over and claimed by the other's.
	f.Add(uint8(0), []byte{0, 0, 1, 17, 1, 2, 2, 0, 1, 1, 2, 16, 3, 10})
	f.Add(uint8(0), []byte{0, 16, 1, 1, 1, 18, 2, 16, 1, 1, 2, 1})
	f.Fuzz(func(t *testing.T, n uint8, ops []byte) {
		if len(ops) > 200 {
			return
		}
		mr := miniredis.RunT(t)
		start := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
		mr.SetTime(start)
		mr.ClockTTL(true) // a lock's owner key expires with its lease, on this clock
		c := redis.NewClient(&redis.Options{Addr: mr.Addr()})
		defer c.Close()
		s, err := New(Config{Client: c, Name: "fuzz", N: int(n%3) + 1, Lease: 100 * time.Millisecond,
			Timeout: 30 * time.Millisecond, Poll: 10 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		// far is another process's Semaphore of the Name, whose Poll of an
		// hour makes its keys live hours: arg&16 makes its calls.
		far, err := New(Config{Client: c, Name: "fuzz", N: s.n, Lease: 100 * time.Millisecond,
			Timeout: 30 * time.Millisecond, Poll: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range []*Semaphore{s, far} {
			// The entry's time to live is fixed here, to follow it in the
			// model.
			s.entryArg = "60"
			// miniredis's clock is moved by the test; the Timeout is real
			// time, and a fuzzing worker on a loaded machine can be slow.
			s.timeout = 10 * time.Second
		}
		m := &model{n: int64(s.n), lease: 100, entry: 60, holders: map[string]int64{}, tokens: map[string]int64{}, direct: map[string]bool{}, qexp: map[string]int64{}}
		// Ids of the form the package makes carry their own lease, which a
		// permit handed to them gets; the others take the caller's.
		m.leases = map[string]int64{"a3/50/1": 50, "b4/200/2": 200, "c5/100/3": 100}
		ids := []string{"w0", "w1", "w2", "a3/50/1", "b4/200/2", "c5/100/3"}
		ctx := context.Background()
		for len(ops) >= 2 {
			op, arg := ops[0]%5, ops[1]
			ops = ops[2:]
			id := ids[arg%6]
			s := s
			if arg&16 != 0 {
				s = far
			}
			switch op {
			case 0, 1:
				if _, held := m.holders[id]; held && m.direct[id] {
					continue // Acquire never asks again once granted
				}
				var entry any = "0"
				if op == 1 {
					entry = s.entryArg
				}
				// Acquire's first attempt says it never asked; later ones
				// that it did.
				_, held := m.holders[id]
				again := held || slices.Contains(m.queue, id)
				r, err := s.attempt(ctx, id, entry, again)
				if err != nil {
					t.Fatal(err)
				}
				want := m.attempt(id, op == 1)
				if r.granted != (want != 0) || (r.granted && r.token != want) {
					t.Fatalf("attempt %s: got %+v, model token %d", id, r, want)
				}
				if !r.granted && op == 1 && r.rank != int64(slices.Index(m.queue, id)) {
					t.Fatalf("%s at place %d, model %d", id, r.rank, slices.Index(m.queue, id))
				}
			case 2:
				// A holder whose lease has not ended may say so, as a
				// Permit that can still prove it does.
				end, holds := m.holders[id]
				proven := holds && end > m.now && arg&8 != 0
				held, err := s.releaseProven(ctx, id, proven)
				if err != nil {
					t.Fatal(err)
				}
				if got, want := held, m.release(id); got != want {
					t.Fatalf("release %s: %v, model %v", id, got, want)
				}
			case 3:
				m.now += int64(arg % 100)
				mr.SetTime(start.Add(time.Duration(m.now) * time.Millisecond))
			case 4:
				v, err := s.eval(ctx, s.renewCall, id, s.leaseArg, s.keyTTLArg)
				if err != nil {
					t.Fatal(err)
				}
				if got, want := v.(int64) == 1, m.renew(id); got != want {
					t.Fatalf("renew %s: %v, model %v", id, got, want)
				}
			}
			if len(m.holders) > int(m.n) {
				t.Fatalf("%d holders of %d permits", len(m.holders), m.n)
			}
			// A lock's key is absent only when nobody waits: its fast
			// way, a SET NX, counts on it.
			if s.lock {
				line, err := c.Exists(ctx, s.keys[1]).Result()
				if err != nil {
					t.Fatal(err)
				}
				if holder, err := c.Exists(ctx, s.keys[0]).Result(); err != nil || (line == 1 && holder == 0) {
					t.Fatalf("a line with no key for its lock's holder (%v)", err)
				}
				// Nor may the key expire before the line, whichever
				// process's keys live longer.
				if line == 1 {
					lineTTL, holderTTL := c.PTTL(ctx, s.keys[1]).Val(), c.PTTL(ctx, s.keys[0]).Val()
					if holderTTL < lineTTL {
						t.Fatalf("the holder's key lives %v, the line's %v", holderTTL, lineTTL)
					}
				}
			}
		}
	})
}
