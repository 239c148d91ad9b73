package redissync

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
)

// These tests drive processes of one Name with different Lease, Poll and
// Timeout through every script path at random, checking the invariants after
// each step; and try the edges of the tokens, of a nil ctx, of a ctx that
// ends as a permit is handed over, and of the keys' hash tag.

// lockState is what Redis holds for a lock, read in one script.
type lockState struct {
	now       int64
	holder    string // the raw value, or ""
	holderTTL int64
	queue     []string
	qexp      map[string]int64
	lineTTL   int64
	seq       int64
	holderID  string // whose lease is live, or ""
}

func readLock(t testing.TB, s *Semaphore) lockState {
	t.Helper()
	v, err := s.client.Eval(context.Background(), `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local h = redis.call('GET', KEYS[1]) or ''
return {now, h, redis.call('PTTL', KEYS[1]), redis.call('ZRANGE', KEYS[2], 0, -1),
	redis.call('ZRANGE', KEYS[3], 0, -1, 'WITHSCORES'), redis.call('PTTL', KEYS[2]),
	redis.call('GET', KEYS[4]) or '0'}`, s.keys).Slice()
	if err != nil {
		t.Fatal(err)
	}
	st := lockState{now: v[0].(int64), holder: v[1].(string), holderTTL: v[2].(int64), lineTTL: v[5].(int64), qexp: map[string]int64{}}
	for _, x := range v[3].([]any) {
		st.queue = append(st.queue, x.(string))
	}
	q := v[4].([]any)
	for i := 0; i < len(q); i += 2 {
		var sc int64
		for _, c := range q[i+1].(string) {
			if c < '0' || c > '9' {
				break
			}
			sc = sc*10 + int64(c-'0')
		}
		st.qexp[q[i].(string)] = sc
	}
	for _, c := range v[6].(string) {
		st.seq = st.seq*10 + int64(c-'0')
	}
	if st.holder != "" {
		if i := lastAt(st.holder); i >= 0 {
			var e int64
			for _, c := range st.holder[i+1:] {
				e = e*10 + int64(c-'0')
			}
			if e > st.now {
				st.holderID = st.holder[:i]
			}
		} else {
			st.holderID = st.holder
		}
	}
	return st
}

func lastAt(s string) int {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == '@' {
			return i
		}
		if s[i] < '0' || s[i] > '9' {
			return -1
		}
	}
	return -1
}

// liveWaiters returns the ids in line whose place has not lapsed, in order.
func (st lockState) liveWaiters() []string {
	var out []string
	for _, id := range st.queue {
		if st.qexp[id] > st.now {
			out = append(out, id)
		}
	}
	return out
}

// TestLockRandomMixedProcesses: three processes of one lock with
// different Lease (10ms, 100ms, 5s), Poll (10ms, 1h, 200ms) and Timeout,
// driven at random through every script path on miniredis's clock (moved
// forward only, in whole milliseconds: miniredis does not move a key's time
// to live back with its clock, as Redis does): the key outlives the line, no
// grant overtakes a live waiter or a live holder, a live lease never
// vanishes, tokens grow. FuzzScripts covers two processes that differ in
// Poll alone; this adds Lease and Timeout, and checks no model's view but
// the invariants themselves.
// acquireOrTry calls s.TryAcquire if try, else s.Acquire.
func acquireOrTry(ctx context.Context, s *Semaphore, try bool) (*Permit, error) {
	if try {
		return s.TryAcquire(ctx)
	}
	return s.Acquire(ctx)
}

// advanceRandom moves mr's clock on from clock by a random time, from a
// millisecond to ten minutes, and returns the new time.
func advanceRandom(r *rand.Rand, mr *miniredis.Miniredis, clock time.Time) time.Time {
	scales := []time.Duration{time.Millisecond, 20 * time.Millisecond, time.Second, 10 * time.Minute}
	clock = clock.Add(time.Duration(r.Int64N(int64(scales[r.IntN(len(scales))]))).Truncate(time.Millisecond))
	mr.SetTime(clock)
	return clock
}

// randomRenew runs the renew script for one of the ids known, if any.
func randomRenew(t *testing.T, r *rand.Rand, known []who) {
	t.Helper()
	if len(known) == 0 {
		return
	}
	w := known[r.IntN(len(known))]
	if _, err := w.s.eval(context.Background(), w.s.renewCall, w.id, w.s.leaseArg, w.s.keyTTLArg); err != nil {
		t.Fatal(err)
	}
}

// who is an id of one of the processes of a random run.
type who struct {
	s  *Semaphore
	id string
}

// randomAttempt runs a random step's attempt: of an id known already (asking
// again) or of a new one of a random process, waiting in line or not.
func randomAttempt(t *testing.T, r *rand.Rand, procs []*Semaphore, known *[]who, seed uint64, step int) (who, attemptResult) {
	t.Helper()
	var w who
	again := false
	if len(*known) > 0 && r.IntN(2) == 0 {
		w = (*known)[r.IntN(len(*known))]
		again = true
	} else {
		s := procs[r.IntN(len(procs))]
		w = who{s, s.newID()}
		*known = append(*known, w)
	}
	var entry any = w.s.entryArg
	if r.IntN(3) == 0 {
		entry = "0"
	}
	res, err := w.s.attempt(context.Background(), w.id, entry, again)
	if err != nil {
		t.Fatalf("seed %d step %d: %v", seed, step, err)
	}
	return w, res
}

func TestLockRandomMixedProcesses(t *testing.T) {
	for seed := uint64(1); seed <= 6; seed++ {
		runMixed(t, seed)
		if t.Failed() {
			return
		}
	}
}

func runMixed(t *testing.T, seed uint64) {
	mr := miniredis.RunT(t)
	clock := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	mr.SetTime(clock)
	mr.ClockTTL(true)
	c := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer c.Close()
	mk := func(lease, poll, timeout time.Duration) *Semaphore {
		s := mustNew(t, Config{Client: c, Name: "mix", N: 1, Lease: lease, Poll: poll, Timeout: timeout})
		s.timeout = 10 * time.Second
		return s
	}
	procs := []*Semaphore{
		mk(10*time.Millisecond, 10*time.Millisecond, 3*time.Millisecond),
		mk(100*time.Millisecond, time.Hour, 0),
		mk(5*time.Second, 200*time.Millisecond, time.Second),
	}
	r := rand.New(rand.NewPCG(seed, 7))
	ctx := context.Background()
	var known []who
	var lastToken int64
	for step := 0; step < 150; step++ {
		before := readLock(t, procs[0])
		op := r.IntN(10)
		switch {
		case op < 4: // an attempt, by a new id or a known one
			w, res := randomAttempt(t, r, procs, &known, seed, step)
			if res.granted {
				if res.token <= lastToken {
					t.Fatalf("seed %d step %d: token %d after %d", seed, step, res.token, lastToken)
				}
				lastToken = res.token
				if before.holderID != w.id {
					lw := before.liveWaiters()
					if len(lw) > 0 && lw[0] != w.id && before.lineTTL >= 0 {
						t.Fatalf("seed %d step %d: %s granted ahead of live waiters %v (state %+v)", seed, step, w.id, lw, before)
					}
					if before.holderID != "" {
						t.Fatalf("seed %d step %d: %s granted while %s holds", seed, step, w.id, before.holderID)
					}
				}
			}
		case op < 6:
			if len(known) == 0 {
				continue
			}
			w := known[r.IntN(len(known))]
			proven := before.holderID == w.id && r.IntN(2) == 0
			if _, err := w.s.releaseProven(ctx, w.id, proven); err != nil {
				t.Fatalf("seed %d step %d: %v", seed, step, err)
			}
		case op < 7:
			randomRenew(t, r, known)
		default:
			clock = advanceRandom(r, mr, clock)
		}
		after := readLock(t, procs[0])
		if op < 4 || op >= 6 {
			if id := before.holderID; id != "" && after.holderID != id {
				end := before.now + before.holderTTL
				if i := lastAt(before.holder); i >= 0 {
					end = 0
					for _, c := range before.holder[i+1:] {
						end = end*10 + int64(c-'0')
					}
				}
				if end > after.now {
					t.Fatalf("seed %d step %d op %d: %s's live lease (ends %d, now %d) vanished: %+v before %+v", seed, step, op, id, end, after.now, after, before)
				}
			}
		}
		if after.seq > 0 && after.seq < lastToken {
			t.Fatalf("seed %d step %d: seq %d below token %d", seed, step, after.seq, lastToken)
		}
		if after.lineTTL >= 0 || after.lineTTL == -1 {
			if after.holder == "" {
				t.Fatalf("seed %d step %d: a line and no holder key: %+v", seed, step, after)
			}
			if after.holderTTL >= 0 && after.holderTTL < after.lineTTL {
				t.Fatalf("seed %d step %d: the holder key lives %d, the line %d: %+v", seed, step, after.holderTTL, after.lineTTL, after)
			}
		}
	}
}

// TestTokensTo2To53: the fencing token goes through Lua, whose numbers are
// doubles, exact below 2^53: up to 2^53-1 every token is the count in Redis,
// one above the last, also when handed over by a message to another
// process's waiter (formatted past the 14 digits Lua's '..' prints); past it
// Acquire and TryAcquire give the permit back and fail with
// ErrTokensExhausted (both layouts, both servers).
func TestTokensTo2To53(t *testing.T) {
	for _, b := range backends(t) {
		for n := 1; n <= 2; n++ {
			t.Run(fmt.Sprintf("%s/N=%d", b.name, n), func(t *testing.T) {
				ctx := context.Background()
				name := fmt.Sprintf("big%d", n)
				// Roomy: no lease ends here, and the default Timeout
				// (250 ms) failed calls on a loaded machine.
				s := mustNew(t, b.roomyConfig(t, name, n))
				ocfg := b.roomyConfig(t, name, n)
				other := mustNew(t, ocfg)
				again := countAgain(ocfg.Client.(*redis.Client), other)
				seq := func() int64 {
					t.Helper()
					v, err := s.client.Get(ctx, s.keys[3]).Int64()
					if err != nil {
						t.Fatal(err)
					}
					return v
				}
				// A hand-over by message, past 14 digits: the waiter
				// takes the token in the message, asking nothing more.
				if err := s.client.Set(ctx, s.keys[3], int64(1e15), 0).Err(); err != nil {
					t.Fatal(err)
				}
				held := acquireN(t, s, n)
				got := make(chan *Permit)
				go func() {
					p, err := other.Acquire(ctx)
					if err != nil {
						t.Error(err)
					}
					got <- p
				}()
				waitQueued(t, s, 1)
				// Not 50 ms after its subscription: an ask of the waiter's
				// still under way at the hand-over claims the permit, with
				// a token more.
				waitAskedAgain(t, again)
				if err := held[0].Release(ctx); err != nil {
					t.Fatal(err)
				}
				p := <-got
				if p == nil {
					t.FailNow()
				}
				if want := int64(1e15) + int64(n) + 1; p.Token() != want || seq() != want {
					t.Errorf("handed over by a message: token %d, seq %d; want %d", p.Token(), seq(), want)
				}
				for _, p := range append(held[1:], p) {
					if err := p.Release(ctx); err != nil {
						t.Fatal(err)
					}
				}

				if err := s.client.Set(ctx, s.keys[3], maxToken-2, 0).Err(); err != nil {
					t.Fatal(err)
				}
				for want := int64(maxToken - 1); want <= maxToken; want++ {
					p, err := s.Acquire(ctx)
					if err != nil {
						t.Fatal(err)
					}
					if p.Token() != want || seq() != want {
						t.Errorf("token %d, seq %d; want %d", p.Token(), seq(), want)
					}
					if err := p.Release(ctx); err != nil {
						t.Fatal(err)
					}
				}
				for _, try := range []bool{false, true} {
					p, err := acquireOrTry(ctx, s, try)
					if p != nil || err != ErrTokensExhausted {
						t.Errorf("past 2^53 (TryAcquire %v): %v, %v; want ErrTokensExhausted", try, p, err)
					}
					if held, queued := counts(t, s); held != 0 || queued != 0 {
						t.Errorf("past 2^53: %d held, %d queued; want the permit given back", held, queued)
					}
				}
			})
		}
	}
}

// panicOf returns what f panics with, or nil.
func panicOf(f func()) (r any) {
	defer func() { r = recover() }()
	f()
	return nil
}

// TestNilContextPanicsNameThePackage: a nil ctx (a caller's bug) given to
// Acquire, TryAcquire or Release panics with a message naming the package,
// as every other misuse does; and the Release that panicked has not marked
// the permit released first: the holder can still give it back (else the
// lock stays taken, unrenewed, for a whole Lease, and a second Release
// panics "already released").
func TestNilContextPanicsNameThePackage(t *testing.T) {
	b := backends(t)[0]
	s := mustNew(t, b.config(b.client(t), "nilctx", 1, time.Minute))
	var nilCtx context.Context
	for name, f := range map[string]func(){
		"Acquire":    func() { _, _ = s.Acquire(nilCtx) },
		"TryAcquire": func() { _, _ = s.TryAcquire(nilCtx) },
	} {
		r := panicOf(f)
		if msg, _ := r.(string); !strings.HasPrefix(msg, "redissync: ") {
			t.Errorf("%s(nil) panics with %v; want a message naming redissync", name, r)
		}
	}
	ctx := context.Background()
	p, err := s.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	r := panicOf(func() { _ = p.Release(nilCtx) })
	if msg, _ := r.(string); !strings.HasPrefix(msg, "redissync: ") {
		t.Errorf("Release(nil) panics with %v; want a message naming redissync", r)
	}
	if r := panicOf(func() {
		if err := p.Release(ctx); err != nil {
			t.Errorf("Release after the panic: %v", err)
		}
	}); r != nil {
		t.Errorf("Release after Release(nil) panicked: %v; the lock stays held for its Lease", r)
		dropHolder(t, s, p.id)
	}
}

// TestSetRandomMixedProcesses: as TestLockRandomMixedProcesses, for a
// Semaphore of 2.
func TestSetRandomMixedProcesses(t *testing.T) {
	for seed := uint64(1); seed <= 5; seed++ {
		runMixedSet(t, seed)
		if t.Failed() {
			return
		}
	}
}

type setState struct {
	now     int64
	holders map[string]int64
	queue   []string
	qexp    map[string]int64
}

func readSet(t testing.TB, s *Semaphore) setState {
	t.Helper()
	v, err := s.client.Eval(context.Background(), `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
return {now, redis.call('ZRANGE', KEYS[1], 0, -1, 'WITHSCORES'), redis.call('ZRANGE', KEYS[2], 0, -1),
	redis.call('ZRANGE', KEYS[3], 0, -1, 'WITHSCORES')}`, s.keys).Slice()
	if err != nil {
		t.Fatal(err)
	}
	num := func(s string) int64 {
		var n int64
		for _, c := range s {
			if c < '0' || c > '9' {
				break
			}
			n = n*10 + int64(c-'0')
		}
		return n
	}
	st := setState{now: v[0].(int64), holders: map[string]int64{}, qexp: map[string]int64{}}
	h := v[1].([]any)
	for i := 0; i < len(h); i += 2 {
		st.holders[h[i].(string)] = num(h[i+1].(string))
	}
	for _, x := range v[2].([]any) {
		st.queue = append(st.queue, x.(string))
	}
	q := v[3].([]any)
	for i := 0; i < len(q); i += 2 {
		st.qexp[q[i].(string)] = num(q[i+1].(string))
	}
	return st
}

func runMixedSet(t *testing.T, seed uint64) {
	mr := miniredis.RunT(t)
	clock := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	mr.SetTime(clock)
	mr.ClockTTL(true)
	c := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer c.Close()
	const n = 2
	mk := func(lease, poll, timeout time.Duration) *Semaphore {
		s := mustNew(t, Config{Client: c, Name: "mixset", N: n, Lease: lease, Poll: poll, Timeout: timeout})
		s.timeout = 10 * time.Second
		return s
	}
	procs := []*Semaphore{
		mk(10*time.Millisecond, 10*time.Millisecond, 3*time.Millisecond),
		mk(100*time.Millisecond, time.Hour, 0),
		mk(5*time.Second, 200*time.Millisecond, time.Second),
	}
	r := rand.New(rand.NewPCG(seed, 9))
	ctx := context.Background()
	var known []who
	var lastToken int64
	for step := 0; step < 150; step++ {
		before := readSet(t, procs[0])
		live := 0
		for _, e := range before.holders {
			if e > before.now {
				live++
			}
		}
		op := r.IntN(10)
		switch {
		case op < 4:
			w, res := randomAttempt(t, r, procs, &known, seed, step)
			if res.granted {
				if res.token <= lastToken {
					t.Fatalf("seed %d step %d: token %d after %d", seed, step, res.token, lastToken)
				}
				lastToken = res.token
				if e, ok := before.holders[w.id]; !ok || e <= before.now {
					ahead := 0
					for _, id := range before.queue {
						if id == w.id {
							break
						}
						if before.qexp[id] > before.now {
							ahead++
						}
					}
					if ahead >= n-live {
						t.Fatalf("seed %d step %d: %s granted with %d live waiters ahead and %d free: %+v", seed, step, w.id, ahead, n-live, before)
					}
				}
			}
		case op < 6:
			if len(known) == 0 {
				continue
			}
			w := known[r.IntN(len(known))]
			e, ok := before.holders[w.id]
			proven := ok && e > before.now && r.IntN(2) == 0
			if _, err := w.s.releaseProven(ctx, w.id, proven); err != nil {
				t.Fatalf("seed %d step %d: %v", seed, step, err)
			}
		case op < 7:
			randomRenew(t, r, known)
		default:
			clock = advanceRandom(r, mr, clock)
		}
		after := readSet(t, procs[0])
		live = 0
		for _, e := range after.holders {
			if e > after.now {
				live++
			}
		}
		if live > n {
			t.Fatalf("seed %d step %d: %d live holders: %+v", seed, step, live, after)
		}
		if op >= 6 || op < 4 {
			for id, e := range before.holders {
				if e > after.now {
					if _, ok := after.holders[id]; !ok {
						t.Fatalf("seed %d step %d: %s's live lease (ends %d, now %d) vanished", seed, step, id, e, after.now)
					}
				}
			}
		}
	}
}

// TestCancelAsHandedOver: a waiter's ctx ends just as the holder's Release
// hands it the lock (the waiter of the holder's own Semaphore, told by the
// Release's reply, or of another, told by a message): whatever its Acquire
// returns, nothing is left in Redis once it has, and a permit it returns is
// the lock's only holder.
//
// Its bounds are generous, as the behaviour is not timing: a Timeout of ten
// seconds (a round trip slowed by a loaded machine is no failure of Redis),
// a lease of a minute (a permit left behind is not hidden by its lease
// ending), and half a minute for the give-backs to land.
func TestCancelAsHandedOver(t *testing.T) {
	for _, b := range backends(t) {
		for _, local := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/local=%v", b.name, local), func(t *testing.T) {
				ctx := context.Background()
				name := fmt.Sprintf("cancelhand%v", local)
				// roomyClient: a client's read timeout of a second
				// failed the Timeout's ten on a loaded machine.
				cfg := b.config(b.roomyClient(t), name, 1, time.Minute)
				cfg.Timeout = 10 * time.Second
				h := mustNew(t, cfg)
				w := h
				if !local {
					cfg.Client = b.roomyClient(t)
					w = mustNew(t, cfg)
				}
				for i := range 15 {
					p, err := h.Acquire(ctx)
					if err != nil {
						t.Fatal(err)
					}
					wctx, cancel := context.WithCancel(ctx)
					type res struct {
						p   *Permit
						err error
					}
					got := make(chan res, 1)
					go func() {
						q, err := w.Acquire(wctx)
						got <- res{q, err}
					}()
					waitQueued(t, h, 1)
					if i%2 == 0 {
						cancel()
					}
					if err := p.Release(ctx); err != nil {
						t.Fatal(err)
					}
					cancel()
					r := <-got
					if i%2 == 0 && r.p != nil {
						t.Errorf("round %d: Acquire returned a permit (token %d) for a ctx ended before the hand-over", i, r.p.Token())
					}
					if r.p != nil {
						if v := holderValue(t, h); v != r.p.id && !strings.HasPrefix(v, r.p.id+"@") {
							t.Fatalf("round %d: Acquire returned a permit, the key is %q", i, v)
						}
						if err := r.p.Release(ctx); err != nil {
							t.Fatalf("round %d: %v", i, err)
						}
					}
					deadline := time.Now().Add(30 * time.Second)
					for {
						held, queued := counts(t, h)
						if held == 0 && queued == 0 {
							break
						}
						if time.Now().After(deadline) {
							t.Fatalf("round %d (%v, %v): %d held, %d queued", i, r.p != nil, r.err, held, queued)
						}
						time.Sleep(2 * time.Millisecond)
					}
				}
			})
		}
	}
}

// clusterTag returns the part of key that Redis Cluster hashes: the text
// between the first '{' and the first '}' after it, if not empty; else the
// whole key.
func clusterTag(key string) string {
	i := strings.IndexByte(key, '{')
	if i < 0 {
		return key
	}
	j := strings.IndexByte(key[i+1:], '}')
	if j <= 0 {
		return key
	}
	return key[i+1 : i+1+j]
}

// TestEveryNameOneSlot: the doc says the keys of a Name carry one hash
// tag, so that it works on Redis Cluster. New takes any non-empty Name and
// any Prefix; a Name that begins with '}' (or a Prefix holding "{}") makes
// the tag empty, so Redis Cluster hashes each whole key, and the Name's keys
// fall in different slots: every script fails with CROSSSLOT.
func TestEveryNameOneSlot(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer c.Close()
	for _, cfg := range []Config{
		{Name: "}"},
		{Name: "}jobs"},
		{Name: "jobs", Prefix: "app{}:"},
	} {
		cfg.Client, cfg.N, cfg.Lease = c, 1, time.Second
		s, err := New(cfg)
		if err != nil {
			continue // refused: fine
		}
		tag := clusterTag(s.keys[0])
		for _, k := range s.keys[1:] {
			if clusterTag(k) != tag {
				t.Errorf("Name %q, Prefix %q: keys %q and %q hash to different slots", cfg.Name, cfg.Prefix, s.keys[0], k)
				break
			}
		}
	}
}
