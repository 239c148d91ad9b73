package adaptive_test

import (
	"context"
	"reflect"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ctxsync/ctxsync/adaptive"
)

// TestAcquireDoneAllocatesNothing: a Ticket is a value; neither Acquire nor
// Done allocates, timed or not.
func TestAcquireDoneAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	l := adaptive.New(adaptive.Config{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if n := testing.AllocsPerRun(10000, func() {
		tk, err := l.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		tk.Done(nil)
	}); n != 0 {
		t.Fatalf("Acquire+Done allocates %v times, want 0", n)
	}
}

// TestTicketFinishedTwiceAfterItsSlotWasReused: a Ticket finished once panics
// when finished again, even after its slot went to another call, and the
// other call's slot is untouched.
func TestTicketFinishedTwiceAfterItsSlotWasReused(t *testing.T) {
	l := adaptive.New(fixed(1, adaptive.NoWait))
	first, _ := l.Acquire(context.Background())
	first.Done(nil)
	second, err := l.Acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	mustPanic(t, "adaptive: Ticket finished twice", func() { first.Done(nil) })
	mustPanic(t, "adaptive: Ticket finished twice", func() { first.Ignore() })
	if n := l.InFlight(); n != 1 {
		t.Fatalf("InFlight() = %d with the second Ticket out, want 1", n)
	}
	second.Ignore()
}

// copyTicket copies a Ticket as a careless caller might (go vet reports a
// plain copy; reflect goes around it).
func copyTicket(t *adaptive.Ticket) (c adaptive.Ticket) {
	reflect.ValueOf(&c).Elem().Set(reflect.ValueOf(t).Elem())
	return
}

// TestCopiedTicketFinishedTwice: a copy of a Ticket carries no mark of the
// original's finish; finishing both would free a slot that is not there.
// With nothing else in flight the count would go below zero, which release
// catches: it panics and leaves the count at zero.
func TestCopiedTicketFinishedTwice(t *testing.T) {
	l := adaptive.New(adaptive.Config{})
	tk, _ := l.Acquire(context.Background())
	cp := copyTicket(tk)
	tk.Done(nil)
	mustPanic(t, "adaptive: Ticket finished twice", func() { cp.Ignore() })
	if n := l.InFlight(); n != 0 {
		t.Fatalf("InFlight() = %d, want 0", n)
	}
	for range 3 { // the Limiter is whole
		tk, err := l.Acquire(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		tk.Ignore()
	}
}

// TestNewcomerNeverOvertakes: a slot freed while a caller is queued goes to
// that caller, never to a newcomer on the lock-free path, even with the
// newcomer running at the moment the slot is freed.
func TestNewcomerNeverOvertakes(t *testing.T) {
	for range 100 {
		synctest.Test(t, func(t *testing.T) {
			l := adaptive.New(fixed(1, time.Hour))
			holder, _ := l.Acquire(context.Background())
			queued := make(chan error, 1)
			go func() {
				tk, err := l.Acquire(context.Background())
				if err == nil {
					time.Sleep(time.Millisecond)
					tk.Ignore()
				}
				queued <- err
			}()
			synctest.Wait()
			newcomer := make(chan time.Duration, 1)
			start := time.Now()
			go func() {
				tk, err := l.Acquire(context.Background())
				if err != nil {
					t.Errorf("newcomer: %v", err)
				} else {
					tk.Ignore()
				}
				newcomer <- time.Since(start)
			}()
			holder.Ignore()
			if err := <-queued; err != nil {
				t.Fatalf("queued caller: %v", err)
			}
			// The queued caller held the slot for 1ms; the newcomer
			// had it only after.
			if d := <-newcomer; d < time.Millisecond {
				t.Fatalf("newcomer had the slot after %v, before the queued caller let it go", d)
			}
		})
	}
}
