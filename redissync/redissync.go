package redissync

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// ErrUnavailable is matched (errors.Is) by the error of a call that Redis did
// not answer in time, or answered with an error. The error also wraps the
// Redis client's error.
var ErrUnavailable = errors.New("redissync: redis unavailable")

// ErrLost is matched by the error of Permit.Release when the permit's lease
// had already ended: another process may have held it since. It is also the
// cause (context.Cause) of a Permit's Context when the lease is lost.
var ErrLost = errors.New("redissync: lease lost")

// ErrTokensExhausted is the error of Acquire and TryAcquire once a Name's
// fencing tokens have reached 2^53, the first the scripts cannot count
// exactly (see the package's doc): the permit granted is given back.
var ErrTokensExhausted = errors.New("redissync: fencing tokens exhausted (2^53)")

// ErrWouldWait is the error of TryAcquire when it would have to wait: no
// permit is free, or a waiter is in line for one. TryAcquire then returns a
// nil Permit with it, never a nil Permit with a nil error, so that a "not
// now" cannot pass for a permit held.
var ErrWouldWait = errors.New("redissync: TryAcquire would wait: no permit is free, or a waiter is in line")

// maxToken is the highest fencing token the scripts count exactly.
const maxToken = 1<<53 - 1

const errZero = "redissync: use New or NewLock; the zero Semaphore is not usable"

// A Semaphore is a set of N permits shared, through Redis, by every Semaphore
// of the same Name in any process.
//
// Use New or NewLock; the zero Semaphore is not usable, and panics at first
// use. A Semaphore must not be copied after first use (go vet reports one):
// hold it by the pointer New returns. It is safe for concurrent use by
// multiple goroutines, and by many processes sharing one Redis.
type Semaphore struct {
	client  redis.UniversalClient
	n       int
	lease   time.Duration
	timeout time.Duration
	poll    time.Duration
	keys    []string // holders (in the layout of lock), queue, qexp, seq: keyArr
	lock    bool     // N is 1: the holder is kept in a string (scripts.go)
	keyArr  [4]string
	keyArgs [4]any // keyArr made interfaces once
	// The scripts, with their keys: pointers into calls, which holds them
	// all in one allocation with the Semaphore.
	acquireCall, releaseCall, renewCall *call
	calls                               [5]call
	takeKeys                            [2]any // holders and seq, for takeCall
	// A lock's fast ways (scripts.go), tried while contended is false:
	// set when one finds the lock held or waited for, cleared when the full
	// acquire script finds it free.
	takeCall, giveCall *call
	contended          atomic.Bool
	wakeArg            any            // the prefix of every Semaphore's wake channel
	channel            string         // this one's: its waiters are told there
	idPrefix           string         // "tag/lease/" of this Semaphore's ids
	ids                *atomic.Uint64 // the count of ids: its own, or its Keyed's
	ownIDs             atomic.Uint64
	// The scripts' arguments, made interfaces once: a string passed as an
	// interface allocates at each call.
	nArg      any
	leaseArg  any
	entryArg  any
	keyTTLArg any

	// pipe carries its scripts to Redis: its own (ownPipe), or its
	// Keyed's.
	pipe    *pipe
	ownPipe pipe

	ctxTimeouts bool
	// roundTrip is how long after a client that honours deadlines gave up
	// an attempt its bytes may still reach Redis: see evalThen.
	roundTrip time.Duration

	mu      sync.Mutex
	waiters map[string]chan grant // the local waiters by id, to wake; guarded by mu
	hub     *hub                  // the subscription joined; nil when none; guarded by mu

	// The Keyed that made it, and its key; nil for New's.
	keyed *Keyed
	key   string
	ks    *keyedSem

	// noRenew stops the renewals, as a crash would: for tests.
	noRenew atomic.Bool
}

func (s *Semaphore) check() {
	if s == nil || s.client == nil {
		panic(errZero)
	}
}

// N returns the number of permits.
func (s *Semaphore) N() int {
	s.check()
	return s.n
}

// Acquire waits for a permit, in line with the waiters of every process
// (first come, first served), and returns it. A done ctx fails at once, even
// when a permit is free.
//
// The line is kept in Redis, in the order the waiters joined it. A newcomer
// never takes a permit while as many waiters as free permits are in line. A
// waiter takes a free permit once fewer waiters than free permits are ahead
// of it: with one permit (a lock) the order is exact, and with N, a waiter
// may be served before at most N-1 of those that joined before it.
//
// It returns ctx.Err() when ctx ends first, and an error matching
// ErrUnavailable when Redis fails to answer an attempt within the Timeout.
// Either way it gives back what it leaves in Redis, its place in line and a
// permit granted as it gave up, and returns within one Timeout: of the start
// of the round trip under way when it gave up, or, if it was waiting between
// round trips, of its ctx's end. If Redis answers the give-back within that
// Timeout, nothing of the call is left in Redis when it returns; if not, the
// give-back goes on in the background, for a Timeout of its own, and if
// Redis does not answer that either, the place lapses after three Polls and
// the permit at the end of its Lease. An attempt it stopped waiting for that
// reaches Redis later has what it left taken back when its round trip ends.
// Once the Name's fencing tokens reach 2^53 (see the package's doc), it gives
// the permit granted back and returns ErrTokensExhausted.
func (s *Semaphore) Acquire(ctx context.Context) (*Permit, error) {
	s.check()
	if err := ctxErr(ctx); err != nil {
		return nil, err
	}
	id := s.newID()
	returned := false
	defer s.takeBackOnPanic(id, &returned)
	p, err := s.acquire(ctx, id)
	returned = true
	return p, err
}

// takeBackOnPanic, deferred by Acquire and TryAcquire, takes back what an
// attempt of id got or left in Redis if the call did not return: a method of
// the caller's ctx (the caller's code) or a client hook panicked, perhaps
// after a permit was granted or handed to id, which nobody would then hold.
// The panic goes on to the caller once the round trip is over. (A panic
// that evalThen or abandon saw first was taken back there too: the release
// script may run twice.)
func (s *Semaphore) takeBackOnPanic(id string, returned *bool) {
	if !*returned {
		s.takeBack(id)
	}
}

// acquire is Acquire for an attempt of id.
func (s *Semaphore) acquire(ctx context.Context, id string) (*Permit, error) {
	if s.takeCall != nil && !s.contended.Load() {
		// The lock's fast way, which never puts id in line, so that
		// nothing can be handed to it meanwhile: it needs no wake-up.
		sent := time.Now()
		token, err := s.take(ctx, id)
		if err != nil {
			s.abandon(ctx, id, sent.Add(s.timeout))
			return nil, err
		}
		if token > 0 {
			return s.granted(ctx, id, token, s.validUntil(sent, s.lease.Truncate(time.Millisecond)), sent.Add(s.timeout))
		}
	}
	wake := make(chan grant, 1)
	s.mu.Lock()
	if s.waiters == nil {
		// Made with the first waiter: most of a Keyed's Semaphores have
		// none.
		s.waiters = make(map[string]chan grant)
	}
	s.waiters[id] = wake
	if k := s.keyed; k != nil {
		k.wmu.Lock()
		k.waiting[id] = s
		k.wmu.Unlock()
	}
	s.mu.Unlock()
	defer s.leave(id)

	subscribed, again := false, false
	var late lateBound // see lateCap
	for {
		sent := time.Now()
		r, err := s.attempt(ctx, id, s.entryArg, again)
		again = true
		if err != nil {
			s.abandon(ctx, id, sent.Add(s.timeout))
			return nil, err
		}
		if r.granted {
			return s.granted(ctx, id, r.token, s.validUntil(sent, r.left), sent.Add(s.timeout))
		}
		if !subscribed {
			subscribed = true
			s.subscribe()
		}
		// A slow poll makes up for a lost message; sooner if a lease ends
		// before and this waiter is near enough the head to take it.
		wait := s.poll/2 + rand.N(s.poll)
		if r.rank >= 0 && r.rank < int64(s.n) && r.untilFree >= 0 {
			wait = min(wait, time.Duration(r.untilFree+1)*time.Millisecond)
		}
		wait = s.lateCap(wait, &late)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			s.abandon(ctx, id, time.Now().Add(s.timeout))
			return nil, ctx.Err()
		case g := <-wake:
			t.Stop()
			if g.token == 0 {
				continue
			}
			// Handed a permit. Its lease began on the server's clock at
			// g.now, which on ours is no earlier than sent plus the time
			// the server's clock moved since it answered that attempt (at
			// r.now, itself no earlier than sent), less what it may have
			// run fast over that time (1/50, as validUntil allows for: a
			// wait of a Poll can be far longer than the lease) and a
			// millisecond for r.now rounded down. With too little of it
			// provable, ask again: the attempt answers with the lease left.
			moved := time.Duration(g.now-r.now) * time.Millisecond
			until := s.validUntil(sent.Add(moved-moved/50-time.Millisecond), g.lease)
			if time.Until(until) < s.lease/3 {
				continue
			}
			by := time.Now().Add(s.timeout)
			if ctx.Err() != nil {
				s.abandon(ctx, id, by)
				return nil, ctx.Err()
			}
			return s.granted(ctx, id, g.token, until, by)
		case <-t.C:
		}
	}
}

// TryAcquire takes a permit if one is free and no process's waiter is in
// line for it, without waiting; if not, it returns ErrWouldWait. It returns
// a Permit with a nil error, or a nil Permit with an error: never both nil,
// so that code which checks only the error never holds a nil Permit.
//
// A done ctx fails at once, with ctx.Err(). It returns an error matching
// ErrUnavailable when Redis fails to answer within the Timeout, and
// ErrTokensExhausted once the Name's fencing tokens reach 2^53 (see the
// package's doc). A call that fails gives back a permit it may have been
// granted as Acquire does, and returns within the Timeout of its round
// trip. ErrWouldWait leaves nothing in Redis: the call never joins the line.
func (s *Semaphore) TryAcquire(ctx context.Context) (*Permit, error) {
	s.check()
	if err := ctxErr(ctx); err != nil {
		return nil, err
	}
	id := s.newID()
	returned := false
	defer s.takeBackOnPanic(id, &returned)
	p, err := s.tryAcquire(ctx, id)
	returned = true
	return p, err
}

// tryAcquire is TryAcquire for an attempt of id.
func (s *Semaphore) tryAcquire(ctx context.Context, id string) (*Permit, error) {
	sent := time.Now()
	r, err := s.attempt(ctx, id, "0", false)
	if err != nil {
		s.abandon(ctx, id, sent.Add(s.timeout))
		return nil, err
	}
	if !r.granted {
		// Not (nil, nil): a caller that checks only err would take that
		// for a permit, and its deferred Release would panic.
		return nil, ErrWouldWait
	}
	return s.granted(ctx, id, r.token, s.validUntil(sent, r.left), sent.Add(s.timeout))
}

// granted returns the Permit of a grant to id, whose lease is proven until
// until; or gives the permit back, waiting for Redis until by (see abandon),
// and fails: when ctx ended meanwhile (a client that honours deadlines sees
// a cancellation only once the round trip is over), or for a token past
// those the scripts count exactly.
func (s *Semaphore) granted(ctx context.Context, id string, token int64, until, by time.Time) (*Permit, error) {
	if err := ctx.Err(); err != nil {
		s.abandon(ctx, id, by)
		return nil, err
	}
	if token > maxToken {
		s.abandon(ctx, id, by)
		return nil, ErrTokensExhausted
	}
	return s.newPermit(ctx, id, token, until), nil
}

// abandon takes back whatever an Acquire or TryAcquire that gives up may
// have left: its place in line, or a permit granted in a reply it did not
// wait for. It waits for Redis until by: the end of the Timeout of the round
// trip that the call gave up, or, if none was under way, a Timeout from now.
// So a call that gives up returns within one Timeout of its ctx's end, or of
// the start of the round trip that Redis failed to answer, as it would with
// nothing to give back; waiting for a second round trip besides doubled
// that when Redis had stopped answering. What Redis has not confirmed by
// then is given back in the background, in a round trip of its own: the
// release script is idempotent, so it may run twice.
//
// A panic of the client's (a hook of the user's) in that first round trip
// goes on to the caller, once the release is on its way in the background.
func (s *Semaphore) abandon(ctx context.Context, id string, by time.Time) {
	ctx = context.WithoutCancel(ctx) // its values, for the client's hooks
	if time.Until(by) > 0 {
		bctx, cancel := context.WithDeadline(ctx, by)
		returned := false
		defer func() {
			if !returned {
				cancel()
				go s.releaseQuietly(ctx, id)
			}
		}()
		_, err := s.release(bctx, id)
		returned = true
		cancel()
		if err == nil {
			return
		}
	}
	go s.releaseQuietly(ctx, id)
}

// release runs the release script for id, and reports whether it held a
// permit whose lease had not ended. The permits it hands to waiters of this
// Semaphore come back in its reply, not by pub/sub: it wakes them itself.
func (s *Semaphore) release(ctx context.Context, id string) (bool, error) {
	return s.releaseProven(ctx, id, false)
}

// releaseProven is release, told whether id holds a permit whose lease it
// can still prove: then Redis need not check that it has not ended.
func (s *Semaphore) releaseProven(ctx context.Context, id string, proven bool) (bool, error) {
	if s.giveCall != nil && proven && !s.contended.Load() {
		v, err := s.eval(ctx, s.giveCall, id)
		if err != nil {
			return false, err // it hands nothing over: nobody to wake
		}
		if n, ok := v.(int64); ok && n == 1 {
			return true, nil
		}
		s.contended.Store(true) // a line: the full script hands it over
	}
	var p any = "0"
	if proven {
		p = "1"
	}
	// The script may have run and handed permits to waiters of this
	// Semaphore, whom only its reply would have told. If the reply is lost,
	// to an error or to a panic of the client's (a hook of the user's, after
	// the script ran), they are all woken to ask again, else they sleep
	// until their poll, by which time a permit held for them may have
	// lapsed, and their place too.
	returned := false
	defer func() {
		if !returned {
			// A panic hides whether a client that honours deadlines
			// gave the round trip up unanswered (see takeBackPanicked):
			// its bytes may yet land, and a take-back, which drops the
			// panic, is not run again.
			if s.ctxTimeouts {
				s.lateWake(s.releaseCall)
			}
			s.wakeWaiters()
		}
	}()
	v, err := s.eval(ctx, s.releaseCall, s.nArg, id, s.wakeArg, s.leaseArg, s.keyTTLArg, p)
	returned = true
	if err != nil {
		s.wakeWaiters()
		return false, err
	}
	return s.handOut(v)
}

// handOut reads the reply of a release script: whether the released id held
// its permit, and the waiters of this process it handed permits to, whom it
// tells.
func (s *Semaphore) handOut(v any) (bool, error) {
	if held, ok := v.(int64); ok {
		return held == 1, nil
	}
	a, ok := v.([]any)
	if !ok || len(a) < 2 || len(a)%3 != 2 {
		return false, unexpected(v)
	}
	held, ok1 := a[0].(int64)
	now, ok2 := a[1].(int64)
	if !ok1 || !ok2 {
		return false, unexpected(v)
	}
	if len(a) > 2 {
		var others []string // ids of waiters of another Semaphore of s's Keyed
		s.mu.Lock()
		for i := 2; i < len(a); i += 3 {
			id, _ := a[i].(string)
			lease, ok1 := a[i+1].(int64)
			token, ok2 := a[i+2].(int64)
			w, mine := s.waiters[id]
			if !mine {
				if s.keyed != nil {
					others = append(others, id)
				}
				continue // else gone: its own release takes the permit back
			}
			if !ok1 || !ok2 || token < 1 || lease < 0 || lease > int64(maxLease/time.Millisecond) {
				signal(w, grant{})
				continue
			}
			signal(w, grant{token: token, now: now, lease: time.Duration(lease) * time.Millisecond})
		}
		s.mu.Unlock()
		// A Permit whose lease was lost keeps the Semaphore its key had
		// then, which its Keyed has since forgotten: a waiter of the key
		// now waits on another Semaphore of the Keyed, with the same tag.
		// Wake it to ask (it holds the permit handed to it), outside s.mu:
		// holding two Semaphores' locks at once could deadlock.
		for _, id := range others {
			s.keyed.wmu.Lock()
			o := s.keyed.waiting[id]
			s.keyed.wmu.Unlock()
			if o != nil {
				o.mu.Lock()
				if w, ok := o.waiters[id]; ok {
					signal(w, grant{})
				}
				o.mu.Unlock()
			}
		}
	}
	return held == 1, nil
}

// take runs the lock's fast way for id: its token, or 0 when the lock is
// held or waited for (then the full scripts run until one finds it free).
func (s *Semaphore) take(ctx context.Context, id string) (int64, error) {
	v, err := s.evalThen(ctx, id, s.takeCall, id, s.leaseArg)
	if err != nil {
		return 0, err
	}
	token, ok := v.(int64)
	if !ok || token < 0 {
		return 0, unexpected(v)
	}
	if token == 0 {
		s.contended.Store(true)
	}
	return token, nil
}

// lateRelease takes the reply of a release script whose caller stopped
// waiting for it, when it comes: v, err and panicked, the client's panic.
//
// The caller woke every waiter of s as it gave up (see releaseProven), but
// the script was still on its way: a waiter whose new attempt reached Redis
// first found nothing, and would sleep until its Poll while the permit that
// the script then handed it is held for nobody, its lease running. The reply
// names it: it is told now. A reply lost again wakes every waiter again.
func (s *Semaphore) lateRelease(v any, err error, panicked any) {
	if panicked == nil && err == nil {
		if _, err = s.handOut(v); err == nil {
			return
		}
	}
	s.wakeWaiters()
}

// lateWake has every waiter of s ask once more when a client that honours
// deadlines has dropped, unanswered, a round trip of c whose bytes may yet
// reach Redis (see evalOwn): if c is the release script, it may run after
// the waiters woken at its failure asked again, and hand one of them a
// permit that only its lost reply would have named. It is called before
// those waiters are woken, so that each finds it noted once it has asked
// again, and bounds its next sleep by the time the bytes can no longer land
// (see lateCap); a waiter that comes afterwards does too.
//
// The waiters time it, each on its own clock, rather than a timer of the
// caller's: a timer made in a testing/synctest bubble stops with the bubble,
// and a Release may be called in one while the waiters wait outside it. It
// is noted on s's pipe, which a Keyed's keys share: a Release that gives up
// lets go of its key, and the key's next waiter here may wait on a new
// Semaphore (the waiters of the other keys ask once more for nothing).
func (s *Semaphore) lateWake(c *call) {
	if c == s.releaseCall {
		s.pipe.lateGen.Add(1)
	}
}

// A lateBound is a waiter's record of the release round trips that
// lateWake noted, on the waiter's own clock: waiters in a testing/synctest
// bubble and outside it, whose clocks differ, share a pipe.
type lateBound struct {
	seen  uint64    // the pipe's lateGen when the waiter last looked; 0 at first
	until time.Time // when the bytes of the last noted can no longer land; zero once past
}

// lateCap bounds wait, the sleep of a waiter of s that has just asked
// Redis, by when the release round trips that lateWake noted can no longer
// land, as b records them: a roundTrip after the waiter first looked once
// one was noted, which was after it failed. Until then the waiter's attempts
// may have reached Redis before those bytes, which may hand it a permit
// that nobody tells it of. A waiter that comes after a late release is
// bounded too: it may have come while the bytes could still land, which
// costs it one more attempt at most. It reads no clock unless a late release
// was noted since the waiter last looked, or its bound has yet to pass.
func (s *Semaphore) lateCap(wait time.Duration, b *lateBound) time.Duration {
	if g := s.pipe.lateGen.Load(); g != b.seen {
		b.seen = g
		b.until = time.Now().Add(s.roundTrip)
		return min(wait, s.roundTrip)
	}
	if b.until.IsZero() {
		return wait
	}
	if d := time.Until(b.until); d > 0 {
		return min(wait, d)
	}
	b.until = time.Time{}
	return wait
}

// wakeWaiters wakes every waiter of s to ask Redis again: a release's reply,
// which would have named those it handed permits to, was lost.
//
// For a Keyed's Semaphore, the waiters of its key's Semaphore are woken too,
// if the Keyed has made the key a new one: a Release whose script is late
// lets go of the key, which the Keyed then forgets, and the key's next
// waiter here waits on a new Semaphore, with the Keyed's tag, which the
// script names in its reply, not by pub/sub. Only one Semaphore of a key has
// waiters: a forgotten one had none, and gets no more.
func (s *Semaphore) wakeWaiters() {
	s.wakeOwn()
	if k := s.keyed; k != nil {
		k.mu.Lock()
		e := k.keys[s.key]
		k.mu.Unlock()
		// One lock at a time: holding two Semaphores' could deadlock.
		if e != nil && e.s != s {
			e.s.wakeOwn()
		}
	}
}

// wakeOwn wakes every waiter of s to ask Redis again.
func (s *Semaphore) wakeOwn() {
	s.mu.Lock()
	for _, w := range s.waiters {
		signal(w, grant{})
	}
	s.mu.Unlock()
}

// takeBackPanicked is takeBack for an attempt whose round trip panicked:
// the caller gets that first panic, and a second one, in takeBack's own
// round trip, is dropped. A client that honours deadlines may have given
// up the round trip unanswered before a hook panicked, which hides the
// error: its bytes may yet land after this take-back, and what they leave
// is taken back again once they no longer can (see evalOwn). A panic is
// rare enough for the timer.
func (s *Semaphore) takeBackPanicked(id string) {
	if s.ctxTimeouts {
		time.AfterFunc(s.roundTrip, func() { s.takeBack(id) })
	}
	s.takeBack(id)
}

// takeBack gives up whatever an attempt of id that landed after its caller
// gave up left in Redis: a place in line, or a permit.
func (s *Semaphore) takeBack(id string) { s.releaseQuietly(context.Background(), id) }

// releaseQuietly runs the release script for id, for a call that cannot
// report its outcome: a take-back, in a timer's goroutine or one of its own,
// or in a caller whose round trip panicked. A panic of the client's (a hook
// of the user's) is dropped here, as an error is: in the background nobody
// could receive it, and it would end the program. What the release did not
// give back is left to its lease, as when Redis does not answer.
func (s *Semaphore) releaseQuietly(ctx context.Context, id string) {
	defer func() { _ = recover() }()
	_, _ = s.release(ctx, id)
}

type attemptResult struct {
	granted   bool
	token     int64
	left      time.Duration // lease left, when granted
	rank      int64         // place in line, or -1
	untilFree int64         // ms until the first lease ends, or -1
	now       int64         // the server's clock, ms
}

// attempt runs the acquire script for id; again says id asked before (so it
// may be in line, or have been handed a permit).
func (s *Semaphore) attempt(ctx context.Context, id string, entry any, again bool) (attemptResult, error) {
	var asked any = "0"
	if again {
		asked = "1"
	}
	if s.takeCall != nil && !again && !s.contended.Load() {
		token, err := s.take(ctx, id)
		if err != nil || token > 0 {
			return attemptResult{granted: err == nil, token: token, left: s.lease.Truncate(time.Millisecond)}, err
		}
	}
	// An attempt given up while on its way may still run, after the
	// caller took back what it left: evalThen takes back what it leaves.
	v, err := s.evalThen(ctx, id, s.acquireCall, s.nArg, s.leaseArg, id, entry, s.wakeArg, s.keyTTLArg, asked)
	if err != nil {
		return attemptResult{}, err
	}
	if token, ok := v.(int64); ok {
		if token < 1 {
			return attemptResult{}, unexpected(v)
		}
		// Granted on the spot: the lock was free and nobody waited.
		if s.takeCall != nil && s.contended.Load() {
			s.contended.Store(false)
		}
		return attemptResult{granted: true, token: token, left: s.lease.Truncate(time.Millisecond)}, nil
	}
	a, ok := v.([]any)
	if !ok || len(a) != 4 {
		return attemptResult{}, unexpected(v)
	}
	var x [4]int64
	for i := range a {
		if x[i], ok = a[i].(int64); !ok {
			return attemptResult{}, unexpected(v)
		}
	}
	if x[0] == 1 {
		if x[1] < 1 {
			return attemptResult{}, unexpected(v)
		}
		return attemptResult{granted: true, token: x[1], left: time.Duration(x[2]) * time.Millisecond, now: x[3]}, nil
	}
	return attemptResult{rank: x[1], untilFree: x[2], now: x[3]}, nil
}

// ctxErr returns ctx.Err(), and panics naming the package when ctx is nil.
func ctxErr(ctx context.Context) error {
	if ctx == nil {
		panic("redissync: nil Context")
	}
	return ctx.Err()
}

func unexpected(v any) error {
	return fmt.Errorf("%w: unexpected reply %v", ErrUnavailable, v)
}

// A call is a script with its keys. Its command's head (EVALSHA, the hash,
// the number of keys) is made interfaces once for every Semaphore of a
// Config, its keys once for the Semaphore: go-redis's Script.Run would
// convert each at every call.
type call struct {
	sc   *redis.Script
	head []any // shared: never written
	keys []any // the Semaphore's: never written
	// frees says the script gives permits back (a release): a pipeline
	// sends it before the others.
	frees bool
}

// run runs the script by its hash, and by its source if Redis does not know
// it yet, as Script.Run does. cmd is its command, from command.
func (c *call) run(ctx context.Context, client redis.UniversalClient, cmd []any) (any, error) {
	v, err := client.Do(ctx, cmd...).Result()
	if err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
		v, err = c.sc.Eval(ctx, client, c.keyStrings(), c.args(cmd)...).Result()
	}
	return v, err
}

// command returns the EVALSHA command of c with args: made once per call of
// a script, and the only copy of args kept, so that the caller's variadic
// arguments stay on its stack.
func (c *call) command(args []any) []any {
	cmd := make([]any, 0, len(c.head)+len(c.keys)+len(args))
	return append(append(append(cmd, c.head...), c.keys...), args...)
}

// args returns the script's arguments in cmd, a command of c.
func (c *call) args(cmd []any) []any {
	return cmd[len(c.head)+len(c.keys):]
}

// keyStrings returns c's keys as strings, for Script.Eval.
func (c *call) keyStrings() []string {
	keys := make([]string, len(c.keys))
	for i, k := range c.keys {
		keys[i] = k.(string)
	}
	return keys
}

// eval runs a script, bounded by ctx and the Timeout. It returns ctx.Err() if
// ctx ended first, and an error matching ErrUnavailable for any failure of
// Redis.
func (s *Semaphore) eval(ctx context.Context, c *call, args ...any) (any, error) {
	return s.evalThen(ctx, "", c, args...)
}

// evalThen is eval for an attempt of id: once a round trip that it stopped
// waiting for ends (the script may have run after all), it takes back what
// the attempt left in Redis. An id of "" takes nothing back.
func (s *Semaphore) evalThen(ctx context.Context, id string, c *call, args ...any) (any, error) {
	if id == "" {
		return s.evalRound(ctx, "", c, args)
	}
	// A client hook (the user's code) may panic once the script has run,
	// and a permit it granted would then be held for a Lease by nobody:
	// it is taken back before the panic goes on to the caller.
	returned := false
	defer func() {
		if !returned {
			s.takeBackPanicked(id)
		}
	}()
	v, err := s.evalRound(ctx, id, c, args)
	returned = true
	return v, err
}

// evalRound is evalThen but for a panic of the client's.
func (s *Semaphore) evalRound(ctx context.Context, id string, c *call, args []any) (any, error) {
	cmd := c.command(args)
	var v any
	var err error
	if o, pl := s.pipe.push(c, cmd); o != nil {
		// Queued for the next pipeline: round trips enough are under way.
		v, err = s.wait(ctx, o, id)
	} else {
		v, err = s.evalOwn(ctx, id, pl, c, cmd)
	}
	if err == nil {
		return v, nil
	}
	if cerr := ctx.Err(); cerr != nil {
		return nil, cerr
	}
	// A client that honours deadlines gives up its read at ctx's very
	// deadline, a moment before ctx's own timer ends it: that is ctx's end.
	if d, ok := ctx.Deadline(); ok && !time.Now().Before(d) {
		return nil, context.DeadlineExceeded
	}
	return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
}

// evalOwn runs cmd, a command of c, in a round trip of its own, in place pl
// of s's pipe, bounded by ctx and the Timeout; for an attempt of id (not
// ""), it takes back what the script leaves in Redis should it run after the
// call stopped waiting.
func (s *Semaphore) evalOwn(ctx context.Context, id string, pl *place, c *call, cmd []any) (v any, err error) {
	tctx, cancel := s.withTimeout(ctx, pl)
	defer cancel()
	if s.ctxTimeouts {
		// The client ends the round trip at our deadline, and drops its
		// connection with the script perhaps still on its way, to run
		// after the caller took back what it left: a permit it grants
		// would be held for a whole Lease. The bytes in flight reach Redis
		// within the time a client would wait for a reply (roundTrip), or
		// never: late runs once more then. Waiting in the background for
		// the reply instead would cost a goroutine on every attempt.
		v, err = s.runOwn(tctx, pl, c, cmd)
		if err != nil && !saidNo(err) {
			if id != "" {
				time.AfterFunc(s.roundTrip, func() { s.takeBack(id) })
			} else {
				s.lateWake(c)
			}
		}
		return v, err
	}
	// The client may wait for its ReadTimeout past ours: stop waiting for
	// it. The round trip ends on its own, and late runs then. A panic of
	// the client's (a hook of the user's) is recovered there and raised
	// again here, in the caller's goroutine: left alone, it would end the
	// program.
	type reply struct {
		v        any
		err      error
		panicked any
	}
	done := make(chan reply, 1)
	go func() {
		var r reply
		defer func() {
			r.panicked = recover()
			done <- r
		}()
		r.v, r.err = s.runOwn(tctx, pl, c, cmd)
	}()
	select {
	case r := <-done:
		if r.panicked != nil {
			panic(r.panicked)
		}
		return r.v, r.err
	case <-tctx.Done():
		if id != "" {
			go func() {
				<-done
				s.takeBack(id)
			}()
		} else if c == s.releaseCall {
			go func() {
				r := <-done
				s.lateRelease(r.v, r.err, r.panicked)
			}()
		}
		return nil, tctx.Err()
	}
}

// withTimeout returns ctx bounded by the Timeout, for a round trip of its
// own in place pl. Making it calls ctx's methods, the caller's code: if one
// panics, pl is given up before the panic goes on, else the pipe would have
// lost it for good, and with it (maxUnderway) every later call.
func (s *Semaphore) withTimeout(ctx context.Context, pl *place) (context.Context, context.CancelFunc) {
	made := false
	defer func() {
		if !made {
			s.pipe.ended(pl, nil)
		}
	}()
	tctx, cancel := context.WithTimeout(ctx, s.timeout)
	made = true
	return tctx, cancel
}

// runOwn runs cmd, a command of c, in a round trip of its own, whose place
// pl in s's pipe it gives up as the round trip ends.
func (s *Semaphore) runOwn(ctx context.Context, pl *place, c *call, cmd []any) (any, error) {
	defer s.pipe.ended(pl, nil)
	return c.run(ctx, s.client, cmd)
}

// newID returns an id unique across processes: "tag/lease/n", which the
// scripts read (see scripts.go).
func (s *Semaphore) newID() string {
	// One allocation, the string's: a Builder grown to fit hands its
	// buffer over, where FormatUint and a concatenation made two.
	var n [13]byte // a uint64 in base 36
	var b strings.Builder
	b.Grow(len(s.idPrefix) + len(n))
	b.WriteString(s.idPrefix)
	b.Write(strconv.AppendUint(n[:0], s.ids.Add(1), 36))
	return b.String()
}

// randomHex returns 24 random hex digits: a Semaphore's tag, unique across
// processes.
func randomHex() string {
	var b [12]byte
	_, _ = crand.Read(b[:])
	return hex.EncodeToString(b[:])
}
