package redissync

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// errDroppedPanic is what a takeBackHook panics with.
var errDroppedPanic = errors.New("a client hook panics after its command was given up")

// takeBackHook gives up commands at their ctx's deadline, as a client that
// honours deadlines does, keeping their bytes for the test to land: the
// next command once dropNext is set; and the second release script of id
// (the first is let through), after which it panics (a hook of the user's,
// in its error path). That second release waits for inLine to be closed
// first: the waiter must be in line, and asleep, before it is dropped.
type takeBackHook struct {
	inLine     chan struct{}
	dropNext   atomic.Bool
	releaseSha string
	id         string // set before use

	mu       sync.Mutex
	releases int      // release scripts of id seen; guarded by mu
	answered int      // release scripts of id answered; guarded by mu
	pending  []func() // the dropped commands, to land; guarded by mu
	after    atomic.Int32
	dropped  chan bool // told at each drop: whether it panics
}

func (h *takeBackHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *takeBackHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		args := cmd.Args()
		drop, panics := h.dropNext.CompareAndSwap(true, false), false
		release := !drop && len(args) > 1 && args[1] == h.releaseSha && slices.Contains(args, any(h.id))
		if release {
			h.mu.Lock()
			h.releases++
			drop = h.releases == 2
			panics = drop
			h.mu.Unlock()
		}
		if !drop {
			err := next(ctx, cmd)
			h.after.Add(1)
			if release {
				h.mu.Lock()
				h.answered++
				h.mu.Unlock()
			}
			return err
		}
		if panics {
			<-h.inLine
		}
		late := redis.NewCmd(context.Background(), args...)
		h.mu.Lock()
		h.pending = append(h.pending, func() { _ = next(context.Background(), late) })
		h.mu.Unlock()
		<-ctx.Done()
		h.after.Store(0)
		h.dropped <- panics
		if panics {
			panic(errDroppedPanic)
		}
		cmd.SetErr(ctx.Err())
		return ctx.Err()
	}
}

func (h *takeBackHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// land sends the oldest command dropped and not landed yet.
func (h *takeBackHook) land() {
	h.mu.Lock()
	f := h.pending[0]
	h.pending = h.pending[1:]
	h.mu.Unlock()
	f()
}

// A take-back (takeBack, releaseQuietly: the release script run in the
// background for an attempt given up) whose round trip a client honouring
// deadlines drops, and in which a client hook then panics, is the last word:
// nobody runs it again. The panic hid the drop: the waiters were woken once,
// at once (releaseProven), but not again when the bytes could no longer land
// (lateWake), as they are when the round trip fails without a panic. The
// bytes, landing after a waiter asked again, give back the permit that the
// given-up attempt was granted and hand it to the waiter, in a reply that
// nobody reads: the waiter slept until its Poll, or the end of a lease (here
// a minute), while the permit was held for it. A panic in a release's round
// trip with such a client must count as a round trip that may yet land.
func TestReviewLate9TakeBackHookPanicWakesAgain(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			// roundTrip is the ReadTimeout, 3 s; the take-back, a
			// roundTrip after the attempt, waits at the hook until the
			// waiter is in line.
			c := redis.NewClient(&redis.Options{Addr: b.addr, DialTimeout: time.Second, ReadTimeout: 3 * time.Second,
				WriteTimeout: time.Second, MaxRetries: -1, ContextTimeoutEnabled: true})
			t.Cleanup(func() { _ = c.Close() })
			cfg := b.config(c, "late9takeback", 2, time.Minute)
			cfg.Poll = time.Hour
			cfg.Timeout = time.Second
			s := mustNew(t, cfg)
			again := countAgain(c, s) // around h: see waitAskedAgain
			h := &takeBackHook{releaseSha: s.releaseCall.head[1].(string), dropped: make(chan bool, 2), inLine: make(chan struct{})}
			c.AddHook(h)
			inLine := sync.OnceFunc(func() { close(h.inLine) })
			defer inLine() // a test that fails early lets the take-back go
			warm(t, s)
			p1, err := s.Acquire(ctx)
			if err != nil {
				t.Fatal(err)
			}
			// A TryAcquire whose round trip is dropped: the background
			// gives back what it left at once (nothing yet), and again a
			// roundTrip later, in a take-back that is dropped in turn.
			h.id = s.idPrefix + strconv.FormatUint(s.ids.Load()+1, 36)
			h.dropNext.Store(true)
			if _, err := s.TryAcquire(ctx); !errors.Is(err, ErrUnavailable) {
				t.Fatalf("TryAcquire = %v; want ErrUnavailable", err)
			}
			if <-h.dropped {
				t.Fatal("the attempt's drop panicked")
			}
			for { // the give-back at once has run, and found nothing
				h.mu.Lock()
				n := h.answered
				h.mu.Unlock()
				if n == 1 {
					break
				}
				time.Sleep(time.Millisecond)
			}
			h.land() // the attempt lands: its id holds the second permit
			// At once once told; a minute (a lease's end) if not.
			got := goAcquire(s, 20*time.Second)
			waitQueued(t, s, 1)
			waitAskedAgain(t, again)
			// Not a roundTrip's 3 s: a loaded machine may take longer to
			// put the waiter in line.
			inLine()
			if !<-h.dropped { // the take-back, a roundTrip on
				t.Fatal("the take-back's drop did not panic")
			}
			// Woken at the take-back's failure, the waiter asks again,
			// and is answered before the take-back's bytes land.
			landThenServed(t, &h.after, got, h.land, "take-back")
			if err := p1.Release(ctx); err != nil {
				t.Fatal(err)
			}
			awaitEmpty(t, s, 10*time.Second, "after the test")
		})
	}
}
