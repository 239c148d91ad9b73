package redissync

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
)

// waitQueued waits until n waiters are in s's line. It fails the test
// after a minute rather than wait for good: a waiter whose Acquire failed
// (and said so with t.Error) never joins the line, and the test would hang
// until go test's own timeout, its error unseen.
func waitQueued(t *testing.T, s *Semaphore, n int64) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for _, queued := counts(t, s); queued != n; _, queued = counts(t, s) {
		if time.Now().After(deadline) {
			t.Fatalf("%d waiters in line after a minute; want %d", queued, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// acquireN takes n permits of s, failing the test if it cannot.
func acquireN(t testing.TB, s *Semaphore, n int) []*Permit {
	t.Helper()
	held := make([]*Permit, 0, n)
	for range n {
		p, err := s.Acquire(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, p)
	}
	return held
}

// waitSubscribed waits until w's waiters are subscribed to their channel,
// and a little more: the subscription wakes them to ask once more (a message
// may have gone before), and then they sleep.
func waitSubscribed(t testing.TB, w *Semaphore) {
	t.Helper()
	for {
		n, err := w.client.PubSubNumSub(context.Background(), w.channel).Result()
		if err != nil {
			t.Fatal(err)
		}
		if n[w.channel] == 1 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond)
}

// againCounter is a client hook that counts the acquire scripts (by hash)
// naming key (a Semaphore's line) that are sent again, by a waiter already
// in line, and that Redis answered without error, once every hook it wraps
// has returned. Added before a hook a test arms, it counts commands that
// have been through that hook.
type againCounter struct {
	sha, key string // set before the hook is added
	n        atomic.Int32
}

// countAgain adds to c an againCounter of the acquire scripts of s's line.
func countAgain(c *redis.Client, s *Semaphore) *againCounter {
	h := &againCounter{sha: s.acquireCall.head[1].(string), key: s.keys[1]}
	c.AddHook(h)
	return h
}

func (h *againCounter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *againCounter) count(cmd redis.Cmder, err error) {
	args := cmd.Args()
	if err != nil || cmd.Err() != nil || len(args) < 3 || args[1] != any(h.sha) ||
		args[len(args)-1] != any("1") || !slices.Contains(args, any(h.key)) {
		return
	}
	h.n.Add(1)
}

func (h *againCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		h.count(cmd, err)
		return err
	}
}

func (h *againCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		for _, cmd := range cmds {
			h.count(cmd, cmd.Err())
		}
		return err
	}
}

// waitAskedAgain waits until a waiter, counted by again, has asked again
// once its subscription was confirmed, and been answered: then it sleeps
// until its Poll or a lease's end (an hour, a minute in the tests that use
// it), sending nothing. A test that then arms a client hook that panics
// must wait for that answer, not for a time: armed before it, the hook
// fires in the waiter's goroutine and ends the test binary. It fails t
// after a minute, which no loaded machine takes to answer two scripts.
func waitAskedAgain(t testing.TB, again *againCounter) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); again.n.Load() < 1; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the waiter did not ask again in a minute once subscribed")
		}
	}
}

// TestFastPathDoesNotOvertakeTheLine: the way of an uncontended Acquire (no
// permit held, nobody in line) is not taken while a waiter is in line, even
// when no permit is held: here the holder's lease ended (as its crash would
// leave it) with the waiter in line. The newcomer's script hands the permit
// to the waiter, and the newcomer gets none.
func TestFastPathDoesNotOvertakeTheLine(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			holder := mustNew(t, b.roomyConfig(t, "fast", 1))
			waiter := mustNew(t, b.roomyConfig(t, "fast", 1))
			newcomer := mustNew(t, b.roomyConfig(t, "fast", 1))
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
			// The holder's lease ends (as its crash would leave it).
			setHolderEnd(t, holder, p.id, time.Now().Add(-time.Second))
			r, err := newcomer.TryAcquire(ctx)
			if r != nil {
				t.Errorf("a newcomer took the permit (token %d) ahead of a waiter in line", r.Token())
				_ = r.Release(ctx)
			} else if !errors.Is(err, ErrWouldWait) {
				t.Fatalf("TryAcquire ahead of a waiter: %v; want ErrWouldWait", err)
			}
			q := <-got
			if q == nil {
				t.Fatal("the waiter got no permit")
			}
			if q.Token() <= p.Token() {
				t.Errorf("token %d after %d", q.Token(), p.Token())
			}
			if err := q.Release(ctx); err != nil {
				t.Fatal(err)
			}
			_ = p.Release(ctx) // its lease is gone with the key
			if held, queued := counts(t, holder); held != 0 || queued != 0 {
				t.Errorf("after the run: %d held, %d queued", held, queued)
			}
		})
	}
}

// TestLocalHandoffPublishesNothing: a Release that hands the permit to a
// waiter of its own Semaphore wakes it from its reply, with no pub/sub
// message; a waiter of another Semaphore is told by a message on that
// Semaphore's channel alone.
func TestLocalHandoffPublishesNothing(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			c := b.client(t)
			s := mustNew(t, b.config(c, "local", 1, time.Second))
			other := mustNew(t, b.config(b.client(t), "local", 1, time.Second))
			sub := b.client(t).PSubscribe(ctx, s.wakeArg.(string)+"*")
			defer sub.Close()
			if _, err := sub.Receive(ctx); err != nil { // the subscription
				t.Fatal(err)
			}
			msgs := sub.Channel()

			p, err := s.Acquire(ctx)
			if err != nil {
				t.Fatal(err)
			}
			got := make(chan *Permit, 2)
			acquire := func(s *Semaphore) {
				q, err := s.Acquire(ctx)
				if err != nil {
					t.Error(err)
				}
				got <- q
			}
			go acquire(s)
			waitQueued(t, s, 1)
			go acquire(other)
			waitQueued(t, s, 2)

			// To the local waiter: no message.
			if err := p.Release(ctx); err != nil {
				t.Fatal(err)
			}
			q := <-got
			if q == nil || q.s != s {
				t.Fatalf("the local waiter did not get the permit: %v", q)
			}
			select {
			case m := <-msgs:
				t.Errorf("a hand-over within the Semaphore published %q on %s", m.Payload, m.Channel)
			case <-time.After(50 * time.Millisecond):
			}

			// To the other Semaphore's waiter: a message on its channel.
			if err := q.Release(ctx); err != nil {
				t.Fatal(err)
			}
			r := <-got
			if r == nil || r.s != other {
				t.Fatalf("the other waiter did not get the permit: %v", r)
			}
			select {
			case m := <-msgs:
				if m.Channel != other.channel || !strings.Contains(m.Payload, r.id+":") {
					t.Errorf("hand-over to another Semaphore: %q on %s; want its id on %s", m.Payload, m.Channel, other.channel)
				}
			case <-time.After(20 * time.Second): // a bound on a failure, not a timing
				t.Error("no message for a waiter of another Semaphore")
			}
			if err := r.Release(ctx); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestScriptsFlushed: the scripts run by their hash, and by their source when
// Redis no longer knows them (SCRIPT FLUSH, a restart, a failover).
func TestScriptsFlushed(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			c := b.client(t)
			l := mustNew(t, b.config(c, "flushed", 1, time.Second))
			for range 2 {
				if err := c.ScriptFlush(ctx).Err(); err != nil {
					t.Fatal(err)
				}
				p, err := l.Acquire(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if err := c.ScriptFlush(ctx).Err(); err != nil {
					t.Fatal(err)
				}
				if err := p.Release(ctx); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// TestPermitContextMadeWhenAsked: a Permit's Context is made at its first
// call, and reflects what happened before: a Context asked for after Release
// is done already (cause context.Canceled), one asked for before is ended by
// Release, and calls racing with Release all get the same one.
func TestPermitContextMadeWhenAsked(t *testing.T) {
	m := miniredisBackend(t)
	ctx := context.WithValue(context.Background(), ctxKey{}, "v")
	l := mustNew(t, m.config(m.client(t), "ctx", 1, time.Second))

	p, err := l.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if c := p.Context(); c.Err() == nil || context.Cause(c) != context.Canceled || c.Value(ctxKey{}) != "v" {
		t.Errorf("Context after Release: err %v, cause %v, value %v", c.Err(), context.Cause(c), c.Value(ctxKey{}))
	}

	p, err = l.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	before := p.Context()
	if before.Err() != nil {
		t.Fatal("the Context of a live Permit is done")
	}
	got := make(chan context.Context, 8)
	for range 8 {
		go func() { got <- p.Context() }()
	}
	if err := p.Release(ctx); err != nil {
		t.Fatal(err)
	}
	for range 8 {
		if c := <-got; c != before {
			t.Error("two calls of Context gave two contexts")
		}
	}
	<-before.Done()
}

type ctxKey struct{}

// miniredisBackend returns a miniredis backend alone.
func miniredisBackend(t *testing.T) backend {
	m := miniredis.RunT(t)
	m.ClockTTL(true)
	return backend{name: "miniredis", addr: m.Addr(), mini: m, prefix: "test:"}
}

// TestMissedHandoffGetsANewToken: a waiter that missed the message of its
// hand-over (its process was not listening) finds its permit at its next
// attempt, with a new token above the one handed: that one was never used.
func TestMissedHandoffGetsANewToken(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			holder := mustNew(t, b.roomyConfig(t, "missed", 1))
			w := mustNew(t, b.roomyConfig(t, "missed", 1))
			p, err := holder.Acquire(ctx)
			if err != nil {
				t.Fatal(err)
			}
			id := w.newID()
			if r, err := w.attempt(ctx, id, w.entryArg, false); err != nil || r.granted || r.rank != 0 {
				t.Fatalf("first attempt: %+v, %v; want in line at place 0", r, err)
			}
			if err := p.Release(ctx); err != nil { // hands the permit to id; nobody listens
				t.Fatal(err)
			}
			handed, err := holder.client.Get(ctx, holder.keys[3]).Int64()
			if err != nil {
				t.Fatal(err)
			}
			r, err := w.attempt(ctx, id, w.entryArg, true)
			if err != nil || !r.granted {
				t.Fatalf("attempt after the hand-over: %+v, %v; want granted", r, err)
			}
			if r.token <= handed || r.left <= 0 || r.left > w.lease {
				t.Errorf("re-asked: token %d (handed %d), lease left %v", r.token, handed, r.left)
			}
			if held, err := w.release(ctx, id); err != nil || !held {
				t.Errorf("release: %v, %v; want held", held, err)
			}
			if held, queued := counts(t, w); held != 0 || queued != 0 {
				t.Errorf("after the run: %d held, %d queued", held, queued)
			}
		})
	}
}

// TestReleaseOfAPermitTakenBehindItsBack: a Release whose lease is still
// proven takes its permit out with no reading of the lease's end; a permit
// that is no longer there (removed behind its holder's back, before any
// renewal saw it) still gives ErrLost.
func TestReleaseOfAPermitTakenBehindItsBack(t *testing.T) {
	for _, b := range backends(t) {
		for n := 1; n <= 2; n++ { // both layouts of the holders
			t.Run(fmt.Sprintf("%s/N=%d", b.name, n), func(t *testing.T) {
				ctx := context.Background()
				l := mustNew(t, b.config(b.client(t), fmt.Sprintf("behind%d", n), n, 10*time.Second))
				p, err := l.Acquire(ctx)
				if err != nil {
					t.Fatal(err)
				}
				dropHolder(t, l, p.id)
				if err := p.Release(ctx); !errors.Is(err, ErrLost) {
					t.Errorf("Release of a permit removed behind its back: %v, want ErrLost", err)
				}
				q, err := l.Acquire(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if err := q.Release(ctx); err != nil {
					t.Errorf("Release of a proven lease: %v", err)
				}
				if held, queued := counts(t, l); held != 0 || queued != 0 {
					t.Errorf("after the run: %d held, %d queued", held, queued)
				}
			})
		}
	}
}
