package redissync

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// These tests try the two forms of a lock's holder key (scripts.go): "id"
// while nobody waits, "id@end" while a line exists, and the key absent only
// when the lock is free and nobody waits.

// holderValue returns the raw value of a lock's holder key, or "".
func holderValue(t testing.TB, s *Semaphore) string {
	t.Helper()
	v, err := s.client.Get(context.Background(), s.keys[0]).Result()
	if err == redis.Nil {
		return ""
	}
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// checkForms fails the test if a lock's line exists without its holder's
// key, or with a key that would expire before the line's.
//
// It reads both times to live in one script, at one instant: read in two
// round trips, the holder's came out short by the time between them, tens
// of milliseconds on a loaded machine.
func checkForms(t testing.TB, s *Semaphore) {
	t.Helper()
	ctx := context.Background()
	ttls, err := s.client.Eval(ctx, `return {redis.call('PTTL', KEYS[1]), redis.call('PTTL', KEYS[2])}`,
		s.keys[:2]).Int64Slice()
	if err != nil {
		t.Fatal(err)
	}
	holder, line := time.Duration(ttls[0])*time.Millisecond, time.Duration(ttls[1])*time.Millisecond
	if line < 0 {
		return // no line
	}
	v := holderValue(t, s)
	if v == "" {
		t.Fatalf("a line (%v to live) and no holder key", line)
	}
	if !strings.Contains(v, "@") {
		t.Fatalf("a line and the holder key in its first form, %q", v)
	}
	// A renewal in the second form keeps the key's PTTL, which is rounded
	// down to the millisecond: some are lost at each (no harm: the line's
	// keys outlive its entries by far, and a waiter's refresh of them guards
	// the key again).
	if holder >= 0 && holder < line-10*time.Millisecond {
		t.Fatalf("the holder key lives %v, less than the line's %v", holder, line)
	}
}

// tokens checks that each token is above the last.
type tokens struct {
	t    testing.TB
	last int64
}

func (k *tokens) next(token int64) {
	k.t.Helper()
	if token <= k.last {
		k.t.Fatalf("token %d after %d", token, k.last)
	}
	k.last = token
}

func mustAttempt(t testing.TB, s *Semaphore, id string, entry any, again, granted bool) attemptResult {
	t.Helper()
	r, err := s.attempt(context.Background(), id, entry, again)
	if err != nil || r.granted != granted {
		t.Fatalf("attempt %s: %+v, %v; want granted %v", id, r, err, granted)
	}
	return r
}

// TestLockSecondFormDeadLeaseNoLine: the line gone (its last waiter left),
// the holder's key stays in its second form; once that lease has ended, a
// newcomer takes the lock by the full script (the SET NX fails on the key),
// with a higher token, in the first form; the old holder's renewal and
// Release find it lost.
func TestLockSecondFormDeadLeaseNoLine(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			s := mustNew(t, b.config(b.client(t), "deadform", 1, time.Minute))
			k := &tokens{t: t}
			h := s.newID()
			k.next(mustAttempt(t, s, h, "0", false, true).token)
			w := s.newID()
			mustAttempt(t, s, w, s.entryArg, false, false)
			checkForms(t, s)
			if held, err := s.release(ctx, w); err != nil || held {
				t.Fatalf("the waiter leaves: %v, %v", held, err)
			}
			v := holderValue(t, s)
			if !strings.HasPrefix(v, h+"@") {
				t.Fatalf("after the line emptied the key is %q; want the second form", v)
			}
			// The lease ends (as a crash leaves it): the key stays.
			past := strconv.FormatInt(time.Now().Add(-time.Second).UnixMilli(), 10)
			if err := s.client.Set(ctx, s.keys[0], h+"@"+past, time.Minute).Err(); err != nil {
				t.Fatal(err)
			}
			p, err := s.TryAcquire(ctx)
			if err != nil || p == nil {
				t.Fatalf("a newcomer, the lock free: %v, %v", p != nil, err)
			}
			k.next(p.Token())
			if v := holderValue(t, s); v != p.id {
				t.Errorf("the newcomer's key is %q; want its first form", v)
			}
			if v, err := s.eval(ctx, s.renewCall, h, s.leaseArg, s.keyTTLArg); err != nil || v.(int64) != 0 {
				t.Errorf("the old holder's renewal: %v, %v; want 0", v, err)
			}
			if held, err := s.release(ctx, h); err != nil || held {
				t.Errorf("the old holder's release: %v, %v; want not held", held, err)
			}
			if v := holderValue(t, s); v != p.id {
				t.Errorf("after the old holder's release the key is %q", v)
			}
			if err := p.Release(ctx); err != nil {
				t.Fatal(err)
			}
			if held, queued := counts(t, s); held != 0 || queued != 0 {
				t.Errorf("after the run: %d held, %d queued", held, queued)
			}
		})
	}
}

// TestLockReleaseOfLapsedSecondFormHandsOver: a holder in the second form
// whose lease ended (it stopped renewing) gets ErrLost from Release, and the
// Release hands the lock to the head of the line, whose token is higher.
//
// The lease ends by the test's hand: it writes an end in the past into the
// holder's key, as the server's clock passing it would leave the key (its
// time to live is the line's). Waiting for a short lease to end made the
// test's every round trip race it on a loaded machine.
func TestLockReleaseOfLapsedSecondFormHandsOver(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			cfg := b.config(b.client(t), "lapsedform", 1, time.Minute)
			s := mustNew(t, cfg)
			s.noRenew.Store(true)
			k := &tokens{t: t}
			p, err := s.Acquire(ctx)
			if err != nil {
				t.Fatal(err)
			}
			k.next(p.Token())
			w := "0abc/60000/1" // a waiter of another process
			mustAttempt(t, s, w, s.entryArg, false, false)
			checkForms(t, s)
			if v := holderValue(t, s); !strings.HasPrefix(v, p.id+"@") {
				t.Fatalf("the holder's key with a line is %q; want its second form", v)
			}
			past := strconv.FormatInt(time.Now().Add(-time.Second).UnixMilli(), 10)
			if err := s.client.SetArgs(ctx, s.keys[0], p.id+"@"+past, redis.SetArgs{KeepTTL: true}).Err(); err != nil {
				t.Fatal(err)
			}
			if _, ok := holderEnd(t, s, p.id); ok {
				t.Fatal("the holder's lease has not ended")
			}
			if err := p.Release(ctx); !errors.Is(err, ErrLost) {
				t.Fatalf("Release of a lapsed lease: %v; want ErrLost", err)
			}
			end, ok := holderEnd(t, s, w)
			if !ok || time.Until(end) < 30*time.Second {
				t.Fatalf("the waiter was not handed the lock for its own lease: %v, %v", ok, end)
			}
			k.next(mustAttempt(t, s, w, s.entryArg, true, true).token)
			if held, err := s.release(ctx, w); err != nil || !held {
				t.Fatalf("the waiter's release: %v, %v", held, err)
			}
			if held, queued := counts(t, s); held != 0 || queued != 0 {
				t.Errorf("after the run: %d held, %d queued", held, queued)
			}
		})
	}
}

// TestLockLastWaiterAbandonsThenNewcomers: the last waiter in line gives up
// (its ctx ends); the holder's key stays in its second form, a newcomer's
// TryAcquire still finds the lock held, the holder's Release (its fast DEL
// refused by the second form) gives it back, and the next newcomer takes it
// by the fast way again.
func TestLockLastWaiterAbandonsThenNewcomers(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			s := mustNew(t, b.config(b.client(t), "abandonlast", 1, time.Minute))
			other := mustNew(t, b.config(b.client(t), "abandonlast", 1, time.Minute))
			k := &tokens{t: t}
			p, err := s.Acquire(ctx)
			if err != nil {
				t.Fatal(err)
			}
			k.next(p.Token())
			actx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
			q, err := other.Acquire(actx)
			cancel()
			if q != nil || !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("the waiter: %v, %v", q != nil, err)
			}
			if held, queued := counts(t, s); held != 1 || queued != 0 {
				t.Fatalf("after the waiter left: %d held, %d queued", held, queued)
			}
			if v := holderValue(t, s); !strings.HasPrefix(v, p.id+"@") {
				t.Errorf("the key is %q; want the second form", v)
			}
			if q, err := other.TryAcquire(ctx); q != nil || !errors.Is(err, ErrWouldWait) {
				t.Fatalf("TryAcquire while held: %v, %v; want none, ErrWouldWait", q != nil, err)
			}
			if err := p.Release(ctx); err != nil {
				t.Fatalf("Release in the second form: %v", err)
			}
			if held, queued := counts(t, s); held != 0 || queued != 0 {
				t.Fatalf("after Release: %d held, %d queued", held, queued)
			}
			for range 3 {
				q, err := other.TryAcquire(ctx)
				if err != nil || q == nil {
					t.Fatalf("TryAcquire once free: %v, %v", q != nil, err)
				}
				k.next(q.Token())
				if v := holderValue(t, s); v != q.id {
					t.Errorf("the key is %q; want the first form", v)
				}
				if err := q.Release(ctx); err != nil {
					t.Fatal(err)
				}
			}
			if other.contended.Load() {
				t.Error("the fast ways are still off after the lock was taken free")
			}
		})
	}
}

// TestLockLineKeysExpireBeforeHolder: the line's keys gone first (their time
// to live ended: here deleted), the holder in the second form renews, a
// newcomer queues behind it (the key guarded again), and the holder's Release
// hands the lock over.
func TestLockLineKeysExpireBeforeHolder(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			s := mustNew(t, b.config(b.client(t), "lineexpires", 1, time.Minute))
			k := &tokens{t: t}
			h := s.newID()
			k.next(mustAttempt(t, s, h, "0", false, true).token)
			mustAttempt(t, s, "gone", s.entryArg, false, false)
			before, _ := holderEnd(t, s, h)
			if err := s.client.Del(ctx, s.keys[1], s.keys[2]).Err(); err != nil {
				t.Fatal(err)
			}
			time.Sleep(5 * time.Millisecond)
			if v, err := s.eval(ctx, s.renewCall, h, s.leaseArg, s.keyTTLArg); err != nil || v.(int64) != 1 {
				t.Fatalf("renew in the second form, no line: %v, %v", v, err)
			}
			after, ok := holderEnd(t, s, h)
			if !ok || !after.After(before) {
				t.Errorf("the renewal moved the end from %v to %v (%v)", before, after, ok)
			}
			w := s.newID()
			mustAttempt(t, s, w, s.entryArg, false, false)
			checkForms(t, s)
			if held, err := s.release(ctx, h); err != nil || !held {
				t.Fatalf("release: %v, %v", held, err)
			}
			k.next(mustAttempt(t, s, w, s.entryArg, true, true).token)
			if v := holderValue(t, s); v != w {
				t.Errorf("the key is %q; want the first form, the line empty", v)
			}
			if held, err := s.release(ctx, w); err != nil || !held {
				t.Fatalf("release: %v, %v", held, err)
			}
			if held, queued := counts(t, s); held != 0 || queued != 0 {
				t.Errorf("after the run: %d held, %d queued", held, queued)
			}
		})
	}
}

// TestLockSecondFormRenewRacesHandover: a renewal of a holder in the second
// form moves its end and keeps its key past the line's; one that lands after
// the hand-over renews nothing, and the next holder's key stays guarded.
func TestLockSecondFormRenewRacesHandover(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			s := mustNew(t, b.config(b.client(t), "renewrace", 1, time.Second))
			k := &tokens{t: t}
			h := s.newID()
			k.next(mustAttempt(t, s, h, "0", false, true).token)
			w1, w2 := s.newID(), s.newID()
			mustAttempt(t, s, w1, s.entryArg, false, false)
			mustAttempt(t, s, w2, s.entryArg, false, false)
			for range 3 {
				time.Sleep(2 * time.Millisecond)
				if v, err := s.eval(ctx, s.renewCall, h, s.leaseArg, s.keyTTLArg); err != nil || v.(int64) != 1 {
					t.Fatalf("renew: %v, %v", v, err)
				}
				checkForms(t, s)
			}
			if held, err := s.release(ctx, h); err != nil || !held {
				t.Fatalf("release: %v, %v", held, err)
			}
			if v, err := s.eval(ctx, s.renewCall, h, s.leaseArg, s.keyTTLArg); err != nil || v.(int64) != 0 {
				t.Fatalf("a renewal after the hand-over: %v, %v; want 0", v, err)
			}
			if v := holderValue(t, s); !strings.HasPrefix(v, w1+"@") {
				t.Fatalf("the key is %q; want w1's second form (w2 waits)", v)
			}
			checkForms(t, s)
			k.next(mustAttempt(t, s, w1, s.entryArg, true, true).token)
			checkForms(t, s)
			if v, err := s.eval(ctx, s.renewCall, w1, s.leaseArg, s.keyTTLArg); err != nil || v.(int64) != 1 {
				t.Fatalf("w1's renewal: %v, %v", v, err)
			}
			if held, err := s.release(ctx, w1); err != nil || !held {
				t.Fatalf("w1's release: %v, %v", held, err)
			}
			k.next(mustAttempt(t, s, w2, s.entryArg, true, true).token)
			if held, err := s.release(ctx, w2); err != nil || !held {
				t.Fatalf("w2's release: %v, %v", held, err)
			}
			if held, queued := counts(t, s); held != 0 || queued != 0 {
				t.Errorf("after the run: %d held, %d queued", held, queued)
			}
		})
	}
}
