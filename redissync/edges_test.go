package redissync

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// realBackend returns a fresh redis-server for the test, or skips.
func realBackend(t *testing.T) backend {
	t.Helper()
	return ownRedis(t)
}

// TestMixedLeaseHandoff: two processes share a Name (and N), but not
// the Lease (the doc requires only N to agree). The releaser hands the permit
// to the waiter with the releaser's own short Lease; the waiter's Permit then
// renews only every third of its own long Lease, so it is never renewed: the
// server frees it after the short lease, another process takes it, and the
// waiter's Lost is still open. Two holders at once, Lost not closed.
//
// Nothing here may hang on a timer being on time. The waiter's Lease is
// roomy, so that no renewal falls in the watch (which ends long before a
// third of it) and its Lost can close only if Redis ends its lease early;
// the process that tries to take the permit meanwhile has roomy timeouts;
// and the watch ends on the server's clock, past the end the short Lease
// would have given, not after a span of ours that a stalled test may spend
// asleep.
func TestMixedLeaseHandoff(t *testing.T) {
	b := realBackend(t)
	ctx := context.Background()
	// The short Lease is 3 s, with a Timeout just under a third of it: the
	// releaser must hold its permit, renewing it, until the waiter queues,
	// and a loaded machine may hold a round trip up for most of a second.
	const short = 3 * time.Second
	shortCfg := Config{Client: b.roomyClient(t), Name: "mixed", N: 1, Lease: short, Timeout: 900 * time.Millisecond, Poll: time.Second}
	rel := mustNew(t, shortCfg)
	long := mustNew(t, Config{Client: b.roomyClient(t), Name: "mixed", N: 1, Lease: roomyLease, Timeout: roomyTimeout, Poll: time.Second})
	other := mustNew(t, Config{Client: b.roomyClient(t), Name: "mixed", N: 1, Lease: roomyLease, Timeout: roomyTimeout, Poll: time.Second})

	p, err := rel.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan *Permit, 1)
	go func() {
		q, err := long.Acquire(ctx)
		if err != nil {
			t.Error(err)
		}
		got <- q
	}()
	for _, queued := counts(t, rel); queued == 0; _, queued = counts(t, rel) {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond)
	if err := p.Release(ctx); err != nil {
		t.Fatal(err)
	}
	q := <-got
	if q == nil {
		t.Fatal("no permit")
	}
	defer q.Release(ctx)
	// The hand-over came before this reading of the server's clock: a
	// permit given the short Lease would be free by its end plus a little.
	handed, err := other.client.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	watchEnd := handed.Add(short + short/50 + 100*time.Millisecond)
	// The waiter holds a permit of its own long Lease, as far as it knows:
	// past the short Lease, nobody else may take it.
	// The clock is read before each try: the last try is made past
	// watchEnd on the server.
	for {
		now, err := other.client.Time(ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		r, err := other.TryAcquire(ctx)
		if err != nil && !errors.Is(err, ErrWouldWait) {
			t.Fatal(err)
		}
		if r != nil {
			select {
			case <-q.Lost():
			default:
				t.Errorf("another process took the permit (token %d) while the waiter's permit (token %d, Lease %v) has not seen Lost", r.Token(), q.Token(), roomyLease)
			}
			_ = r.Release(ctx)
			return
		}
		if now.After(watchEnd) {
			return
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// TestHandoffGivesTheWaitersLease: a permit handed over by another process's
// Release is held for the Lease of the waiter's own Config, not the
// releaser's: the entry in line carries it (in its id). Both ways: a short
// lease handing to a long one, and a long one to a short one.
func TestHandoffGivesTheWaitersLease(t *testing.T) {
	b := realBackend(t)
	ctx := context.Background()
	// No lease ends here: each side holds its permit for a few round trips
	// only, which a loaded machine may stretch to seconds. So the leases are
	// roomy, and far enough apart to tell whose the handed permit has, with
	// a Timeout and a client that wait out a loaded machine's round trips.
	const short, long = roomyLease, 6 * roomyLease
	for _, tc := range []struct{ releaser, waiter time.Duration }{{short, long}, {long, short}} {
		name := fmt.Sprintf("lease%v-%v", tc.releaser, tc.waiter)
		rel := mustNew(t, Config{Client: b.roomyClient(t), Name: name, N: 1, Lease: tc.releaser, Timeout: roomyTimeout, Poll: time.Second})
		wai := mustNew(t, Config{Client: b.roomyClient(t), Name: name, N: 1, Lease: tc.waiter, Timeout: roomyTimeout, Poll: time.Second})
		p, err := rel.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got := make(chan *Permit, 1)
		go func() {
			q, err := wai.Acquire(ctx)
			if err != nil {
				t.Error(err)
			}
			got <- q
		}()
		for _, queued := counts(t, rel); queued == 0; _, queued = counts(t, rel) {
			time.Sleep(time.Millisecond)
		}
		if err := p.Release(ctx); err != nil {
			t.Fatal(err)
		}
		q := <-got
		if q == nil {
			t.Fatal("no permit")
		}
		end, ok := holderEnd(t, rel, q.id)
		if !ok {
			t.Fatal("the waiter holds no permit")
		}
		now, err := rel.client.Time(ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		left := end.Sub(now)
		// The waiter's lease, less the time since the hand-over; far from
		// the releaser's either way.
		if left > tc.waiter || left < tc.waiter-(long-short)/2 {
			t.Errorf("releaser's Lease %v, waiter's %v: the handed permit has %v left on the server", tc.releaser, tc.waiter, left)
		}
		if err := q.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// TestLateGrantNotRenewedInTime: a waiter that learns of its permit late
// (the pub/sub message delayed, as by a slow network or a pause of the
// process) takes a Permit with less of its lease left than a fresh one. Its
// first renewal was due a full third of a Lease after the grant, whatever was
// left: with less than that, the lease ended on the server before the first
// renewal, and another holder took the permit while the waiter still held it.
//
// Nothing here waits on a timer being on time. The waiter's dispatch is held
// up for 0.45 of its Lease, so that it takes the hand-over itself with about
// half the lease proven (above the third below which it asks Redis again,
// with room for a loaded machine's delays); what the test checks is when the
// first renewal was due (at most half of what was left: a third of a Lease
// would come after half of it), and that another's grant never comes while
// the waiter can prove its lease (Permit.until), not when its Lost timer
// runs. A try in which the waiter came so late that it asked Redis again (and
// got a fresh lease: one more token) proves nothing, and is made again.
func TestLateGrantNotRenewedInTime(t *testing.T) {
	b := realBackend(t)
	const tries = 5
	for try := 1; ; try++ {
		if lateGrant(t, b, fmt.Sprintf("late%d", try)) {
			return
		}
		if try == tries {
			t.Fatalf("in %d tries the waiter never took the late hand-over itself", tries)
		}
	}
}

// lateGrant is a try of TestLateGrantNotRenewedInTime on the Name name: it
// reports whether the waiter took the hand-over itself.
func lateGrant(t *testing.T, b backend, name string) bool {
	ctx := context.Background()
	const lease = 2 * time.Second
	holder := mustNew(t, Config{Client: b.client(t), Name: name, N: 1, Lease: time.Minute, Poll: time.Hour})
	cfg := Config{Client: b.client(t), Name: name, N: 1, Lease: lease, Poll: time.Hour}
	waiter := mustNew(t, cfg)
	cfg.Client = b.client(t)
	other := mustNew(t, cfg)

	p, err := holder.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan *Permit, 1)
	go func() {
		q, err := waiter.Acquire(ctx)
		if err != nil {
			t.Error(err)
		}
		got <- q
	}()
	waitQueued(t, holder, 1)
	// Subscribed: the hand-over's message reaches the waiter's process.
	for n := int64(0); n == 0; {
		m, err := holder.client.PubSubNumSub(ctx, waiter.channel).Result()
		if err != nil {
			t.Fatal(err)
		}
		n = m[waiter.channel]
		time.Sleep(time.Millisecond)
	}
	waiter.mu.Lock() // the message is delivered late
	if err := p.Release(ctx); err != nil {
		t.Fatal(err)
	}
	released := time.Now()
	time.Sleep(time.Until(released.Add(lease * 45 / 100)))
	waiter.mu.Unlock()
	q := <-got
	if q == nil {
		t.Fatal("no permit")
	}
	defer q.Release(ctx)
	if q.Token() != p.Token()+1 {
		t.Logf("the waiter came %v after the release, and asked Redis again: its lease is a fresh one", time.Since(released))
		return false
	}
	t.Logf("the waiter took its permit %v after the release, with %v of its lease proven; first renewal due in %v",
		time.Since(released), q.madeLeft, q.madeFirst)
	if q.madeLeft <= 0 || q.madeLeft >= lease*2/3 {
		t.Errorf("a hand-over taken %v late was proven for %v", lease*45/100, q.madeLeft)
	}
	if q.madeFirst > q.madeLeft/2 {
		t.Errorf("with %v of the lease proven, the first renewal was due in %v: past half of it", q.madeLeft, q.madeFirst)
	}
	deadline := time.Now().Add(lease)
	for time.Now().Before(deadline) {
		r, err := other.TryAcquire(ctx)
		if err != nil && !errors.Is(err, ErrWouldWait) && !isUnavailable(err) {
			t.Fatal(err)
		}
		if r != nil {
			granted := time.Now()
			q.mu.Lock()
			until := q.until
			q.mu.Unlock()
			if until.After(granted) {
				t.Errorf("another took the permit %v after the release while the waiter could prove its lease %v more", granted.Sub(released), until.Sub(granted))
			}
			_ = r.Release(ctx)
			return true
		}
		time.Sleep(time.Millisecond)
	}
	return true
}

// staleWithWaiter sets up N = 2 with both holders crashed and their leases
// ended, and one waiter of another process in line between its polls. It
// returns a Semaphore of a live process on the same name.
//
// The leases are ended by hand, in Redis: with short ones, waited out, a
// loaded machine's round trips outlasted the wait, and the permits were
// still held when the test looked. No lease ends with time: the clients
// and the Timeout are roomy, as the round trips of a loaded machine missed
// the default Timeout (250 ms) now and then.
func staleWithWaiter(t *testing.T, name string) *Semaphore {
	t.Helper()
	b := realBackend(t)
	ctx := context.Background()
	cfg := Config{Client: b.roomyClient(t), Name: name, N: 2, Lease: time.Minute, Poll: staleWaiterPoll, Timeout: roomyTimeout}
	crashed := mustNew(t, cfg)
	crashed.noRenew.Store(true)
	cfg.Client = b.roomyClient(t)
	s := mustNew(t, cfg)
	held := acquireN(t, crashed, 2)
	// The waiter joins the line (its first attempt), then sleeps on its poll.
	r, err := s.attempt(ctx, "waiter-elsewhere", s.entryArg, false)
	if err != nil || r.granted {
		t.Fatal(r, err)
	}
	for _, p := range held {
		// A lease that ended long ago on the server's clock.
		if err := s.client.ZAddXX(ctx, s.keys[0], redis.Z{Score: 1, Member: p.id}).Err(); err != nil {
			t.Fatal(err)
		}
		if _, ok := holderEnd(t, s, p.id); !ok {
			t.Fatal("a crashed holder is gone from Redis")
		}
	}
	return s
}

// staleWaiterPoll is the Poll of staleWithWaiter's Semaphores: a waiter put
// to sleep on its poll sleeps at least half of it, 20 s, which tells a call
// put to sleep from one that took long on a loaded machine.
const staleWaiterPoll = 40 * time.Second

// TestTryAcquireFreePermitRefused pins a refusal of a free permit: in the
// state staleWithWaiter sets up, a newcomer's TryAcquire handed one permit to
// the waiter and then refused the other, although it was free and nobody was
// in line any more (the acquire script judged the line by its length before
// the hand-over). The doc promises it "takes a permit if one is free and no
// process's waiter is in line for it".
func TestTryAcquireFreePermitRefused(t *testing.T) {
	ctx := context.Background()
	s := staleWithWaiter(t, "stale")
	q, err := s.TryAcquire(ctx)
	if err != nil && !errors.Is(err, ErrWouldWait) {
		t.Fatal(err)
	}
	if held, queued := counts(t, s); q == nil {
		t.Errorf("TryAcquire refused with %d of 2 permits held and %d waiters in line", held, queued)
	} else {
		_ = q.Release(ctx)
	}
	if q2, _ := s.TryAcquire(ctx); q2 != nil {
		_ = q2.Release(ctx)
	}
}

// TestAcquireWaitsWithFreePermit: in the same state, Acquire must not be put
// in line behind nobody to sleep a Poll while a permit is free.
func TestAcquireWaitsWithFreePermit(t *testing.T) {
	ctx := context.Background()
	s := staleWithWaiter(t, "stale2")
	start := time.Now()
	q, err := s.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// A waiter put to sleep on its poll sleeps at least half a Poll: 20
	// seconds, which no round trip takes even on a loaded machine.
	if d := time.Since(start); d >= staleWaiterPoll/2 {
		t.Errorf("Acquire took %v with a permit free and nobody in line", d)
	}
	_ = q.Release(ctx)
}

// TestTypedNilClient: a nil *redis.Client in the interface passes the
// nil check and New panics with a bare nil dereference, naming nothing.
func TestTypedNilClient(t *testing.T) {
	defer func() {
		if r := recover(); r != nil {
			msg := ""
			switch v := r.(type) {
			case error:
				msg = v.Error()
			case string:
				msg = v
			}
			if !strings.Contains(msg, "redissync") {
				t.Errorf("New with a nil *redis.Client panics %q, which does not name the package", msg)
			}
		}
	}()
	var c *redis.Client
	_, err := New(Config{Client: c, Name: "x", N: 1, Lease: time.Second})
	if err == nil {
		t.Error("New with a nil *redis.Client: no error")
	}
}

// TestSubMillisecondLease: with a short Lease (11ms, or 10.999ms),
// the holder's Lost closes after another process has already been granted
// the permit: the margin validUntil keeps (Lease/50 = 0.22ms) is smaller than
// the error of the server's clock floored to the millisecond in the scripts
// (and, on renewals, of the Lease truncated to whole milliseconds).
//
// Neither Semaphore renews, so their Timeout, which Config holds below a
// third of the Lease for the renewals' sake (3 ms here), is set to
// roomyTimeout by hand (see longTimeout), on a roomyClient: on a loaded
// machine, round trips cut short at 3 ms left permits granted late, and the
// test retried around them; one cut short at a second (the Timeout set here
// before, and the ReadTimeout of client) failed the test.
var leaseUnderTest = 10*time.Millisecond + 999*time.Microsecond

func TestSubMillisecondLease(t *testing.T) {
	b := realBackend(t)
	ctx := context.Background()
	cfg := Config{Client: b.roomyClient(t), Name: "ms", N: 1, Lease: leaseUnderTest,
		Timeout: 3 * time.Millisecond, Poll: 10 * time.Millisecond}
	crashed := mustNew(t, cfg)
	crashed.noRenew.Store(true)
	longTimeout(crashed)
	cfg.Client = b.roomyClient(t)
	other := mustNew(t, cfg)
	longTimeout(other)
	bad, late := 0, 0
	for range 20 {
		p, err := crashed.TryAcquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for {
			q, err := other.TryAcquire(ctx)
			if errors.Is(err, ErrWouldWait) {
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			granted := time.Now()
			p.mu.Lock()
			until := p.until
			p.mu.Unlock()
			select {
			case <-p.Lost():
			default:
				// Lost closes when the holder's timer runs, which a
				// loaded machine may hold up: a fault only if the
				// holder could still prove its lease.
				if until.After(granted) {
					bad++
				} else {
					late++
				}
			}
			// Its 11 ms lease may have lapsed meanwhile (ErrLost).
			if err := q.Release(ctx); err != nil && !errors.Is(err, ErrLost) {
				t.Fatal(err)
			}
			break
		}
		_ = p.Release(ctx) // ErrLost, most often
	}
	if bad > 0 {
		t.Errorf("%d of 20 times another took the permit while its holder could still prove its lease", bad)
	}
	if late > 0 {
		t.Logf("%d of 20 times the holder's timer ran after its lease ended, late", late)
	}
}

// longTimeout gives s, which must never renew a permit, a Timeout of
// roomyTimeout: more than any round trip of a loaded machine (a second was
// not), on a client whose ReadTimeout is no shorter (a roomyClient).
func longTimeout(s *Semaphore) {
	s.timeout = roomyTimeout
	s.ownPipe.timeout = roomyTimeout
}

// TestProvenLeaseExceedsServerLease: what TryAcquire believes of a
// lease (validUntil(sent, left), the code of TryAcquire) must never outlast
// the lease Redis keeps (the holders score, ms on the server's clock; here the
// same host, so the same clock). The scripts floor TIME to the millisecond,
// so a lease ends up to 1ms before now+Lease, while the margin is Lease/50:
// 0.22ms at Lease 11ms.
func TestProvenLeaseExceedsServerLease(t *testing.T) {
	b := realBackend(t)
	ctx := context.Background()
	for i, lease := range []time.Duration{11 * time.Millisecond, 10*time.Millisecond + 999*time.Microsecond, 60*time.Millisecond + 900*time.Microsecond,
		11 * time.Millisecond, 60*time.Millisecond + 900*time.Microsecond} {
		n := 1 + i/3 // both layouts of the holders: the lock's, and the sorted set's
		s := mustNew(t, Config{Client: b.roomyClient(t), Name: fmt.Sprintf("bound%d", n), N: n, Lease: lease, Timeout: 3 * time.Millisecond, Poll: 10 * time.Millisecond})
		longTimeout(s) // it renews nothing: see TestSubMillisecondLease
		bad, worst := 0, time.Duration(0)
		// 50 grants read back from Redis while their lease lasts. On a
		// loaded machine, the read may come after a lease of 11 ms has
		// ended, and Redis has let the permit go, as it should: such a
		// grant proves nothing either way, and another is made.
		measured := 0
		for i := 0; measured < 50; i++ {
			if i == 1000 {
				t.Fatalf("N %d, Lease %v: only %d of 1000 grants were read back before their lease ended", n, lease, measured)
			}
			id := s.newID()
			sent := time.Now()
			r, err := s.attempt(ctx, id, "0", false)
			if err != nil || !r.granted {
				t.Fatal(r, err)
			}
			until := s.validUntil(sent, r.left)
			end, ok := holderEnd(t, s, id)
			switch {
			case ok:
				measured++
				if over := until.Sub(end); over > 0 {
					bad++
					worst = max(worst, over)
				}
			case time.Since(sent) < lease:
				t.Fatal("granted, but holds no permit")
			}
			if _, err = s.release(ctx, id); err != nil {
				t.Fatal(err)
			}
			time.Sleep(time.Duration(i%7) * 130 * time.Microsecond)
		}
		if bad > 0 {
			t.Errorf("N %d, Lease %v: %d of 50 grants proven up to %v past the end Redis keeps", n, lease, bad, worst)
		}
	}
}
