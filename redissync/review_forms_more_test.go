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

// TestLockFormsClockJumps: the server's clock jumps (miniredis, whose keys'
// times to live follow its clock): forward past a second-form holder's
// lease, the head of the line takes the lock; forward past every key's time
// to live, a newcomer takes it free; backward, a second-form holder still
// renews and gives it back to the head. Tokens grow throughout.
func TestLockFormsClockJumps(t *testing.T) {
	for _, b := range backends(t) {
		if b.mini == nil {
			continue // a real server's clock is not ours to move
		}
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			clock := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
			b.mini.SetTime(clock)
			jump := func(d time.Duration) {
				clock = clock.Add(d)
				b.mini.SetTime(clock)
			}
			s := mustNew(t, b.config(b.client(t), "jumps", 1, time.Second))
			k := &tokens{t: t}
			h, w1, w2 := s.newID(), s.newID(), s.newID()
			k.next(mustAttempt(t, s, h, "0", false, true).token)
			mustAttempt(t, s, w1, s.entryArg, false, false)
			mustAttempt(t, s, w2, s.entryArg, false, false)
			checkForms(t, s)

			// Forward past h's lease, within the waiters' places.
			jump(1100 * time.Millisecond)
			checkForms(t, s)
			k.next(mustAttempt(t, s, w1, s.entryArg, true, true).token)
			if v := holderValue(t, s); !strings.HasPrefix(v, w1+"@") {
				t.Fatalf("the key is %q; want w1's second form", v)
			}
			if held, err := s.release(ctx, h); err != nil || held {
				t.Errorf("h's late release: %v, %v", held, err)
			}
			checkForms(t, s)

			// Backward: w1 renews, and its Release hands to w2.
			jump(-time.Hour)
			if v, err := s.eval(ctx, s.renewCall, w1, s.leaseArg, s.keyTTLArg); err != nil || v.(int64) != 1 {
				t.Fatalf("renew after a jump back: %v, %v", v, err)
			}
			checkForms(t, s)
			if held, err := s.release(ctx, w1); err != nil || !held {
				t.Fatalf("w1's release: %v, %v", held, err)
			}
			if _, ok := holderEnd(t, s, w2); !ok {
				t.Fatal("w2 was not handed the lock")
			}
			mustAttempt(t, s, "w3", s.entryArg, false, false)
			checkForms(t, s)

			// Forward past everything: every key expires but seq.
			jump(24 * time.Hour)
			if held, queued := counts(t, s); held != 0 || queued != 0 {
				t.Fatalf("a day later: %d held, %d queued", held, queued)
			}
			p, err := s.Acquire(ctx)
			if err != nil {
				t.Fatal(err)
			}
			k.next(p.Token())
			if err := p.Release(ctx); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestLockFormsDeadLeaseBehindAnExpiredLine: the line's keys expired with
// the holder still in the second form, its lease ended since: a newcomer's
// Acquire (the SET NX refused by the key) takes the lock at once, in the
// first form, with a higher token.
func TestLockFormsDeadLeaseBehindAnExpiredLine(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			// A long lease, ended by hand (as in
			// TestLockReleaseOfLapsedSecondFormHandsOver): a short one
			// raced the test's round trips on a loaded machine.
			cfg := b.config(b.client(t), "deadbehind", 1, time.Minute)
			s := mustNew(t, cfg)
			k := &tokens{t: t}
			h := s.newID()
			k.next(mustAttempt(t, s, h, "0", false, true).token)
			mustAttempt(t, s, "gone", s.entryArg, false, false)
			if err := s.client.Del(ctx, s.keys[1], s.keys[2]).Err(); err != nil {
				t.Fatal(err)
			}
			past := strconv.FormatInt(time.Now().Add(-time.Second).UnixMilli(), 10)
			if err := s.client.SetArgs(ctx, s.keys[0], h+"@"+past, redis.SetArgs{KeepTTL: true}).Err(); err != nil {
				t.Fatal(err)
			}
			if _, ok := holderEnd(t, s, h); ok {
				t.Fatal("h's lease has not ended")
			}
			if v := holderValue(t, s); !strings.HasPrefix(v, h+"@") {
				t.Fatalf("the key is %q; want h's second form, kept", v)
			}
			actx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			p, err := s.Acquire(actx)
			if err != nil {
				t.Fatal(err)
			}
			k.next(p.Token())
			if v := holderValue(t, s); v != p.id {
				t.Errorf("the key is %q; want the first form", v)
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

// TestMismatchedNWithALine: a lock held with a line (its key in the second
// form) shuts out a Semaphore of 2 of the same Name, and a Semaphore of 2
// whose permits are all held with a line shuts out the lock: refusals or
// errors, never a grant, whichever layout's line is there.
func TestMismatchedNWithALine(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			lock := mustNew(t, b.config(b.client(t), "mismatchline", 1, time.Minute))
			sem := mustNew(t, b.config(b.client(t), "mismatchline", 2, time.Minute))
			shut := func(s *Semaphore, what string) {
				t.Helper()
				if r, err := s.attempt(ctx, s.newID(), "0", false); err == nil && r.granted {
					t.Errorf("%s: TryAcquire granted (token %d)", what, r.token)
				}
				id := s.newID()
				if r, err := s.attempt(ctx, id, s.entryArg, false); err == nil && r.granted {
					t.Errorf("%s: Acquire granted (token %d)", what, r.token)
				}
				_, _ = s.release(ctx, id)
			}
			h := lock.newID()
			mustAttempt(t, lock, h, "0", false, true)
			lw := lock.newID()
			mustAttempt(t, lock, lw, lock.entryArg, false, false)
			shut(sem, "a lock held with a line")
			if held, err := lock.release(ctx, h); err != nil || !held {
				t.Fatalf("release: %v, %v", held, err)
			}
			shut(sem, "a lock handed to its line")
			mustAttempt(t, lock, lw, lock.entryArg, true, true)
			if held, err := lock.release(ctx, lw); err != nil || !held {
				t.Fatalf("release: %v, %v", held, err)
			}
			if held, queued := counts(t, lock); held != 0 || queued != 0 {
				t.Fatalf("the lock's keys left: %d held, %d queued", held, queued)
			}

			a, c := sem.newID(), sem.newID()
			mustAttempt(t, sem, a, "0", false, true)
			mustAttempt(t, sem, c, "0", false, true)
			sw := sem.newID()
			mustAttempt(t, sem, sw, sem.entryArg, false, false)
			shut(lock, "a Semaphore of 2 full, with a line")
			if held, err := sem.release(ctx, a); err != nil || !held {
				t.Fatalf("release: %v, %v", held, err)
			}
			shut(lock, "a Semaphore of 2 handed to its line")
			for _, id := range []string{c, sw} {
				if _, err := sem.release(ctx, id); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := lock.release(ctx, "x"); err != nil && !errors.Is(err, ErrUnavailable) {
				t.Fatal(err)
			}
		})
	}
}
