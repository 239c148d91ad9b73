package adaptive

import (
	"context"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// Regression: a Ticket finished twice (through a copy, which the Ticket's
// doc warns is not seen) that takes the calls in flight below zero is
// caught by release, which panics and puts the count back, but only while
// nobody is queued. With callers queued, the Add of -1 borrows queuedBit
// instead of going past it: the word then shows 2⁴¹-1 calls in flight and
// no one queued, release sees no flag and returns, and the Limiter is
// wedged for good: the queued caller is never granted (here it is shed by
// its MaxWait), and every later Acquire finds the limit reached. The right
// behaviour: release catches a count below zero whatever the flags (as
// sample does, by the count's bits), panics, and leaves the Limiter whole.
//
// The moment with callers queued and none in flight is a release's, between
// its Add and its lock: the test holds the lock to keep it open.
func TestReviewS4_TicketFinishedTwiceWhileQueuedWedgesLimiter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		bg := context.Background()
		l := New(Config{InitialLimit: 1, MinLimit: 1, MaxLimit: 1, MaxWait: time.Second})
		tk, err := l.Acquire(bg)
		if err != nil {
			t.Fatal(err)
		}
		var cp Ticket // a copy, as a careless caller might make one
		reflect.ValueOf(&cp).Elem().Set(reflect.ValueOf(tk).Elem())

		queued := make(chan error, 1)
		go func() {
			tk, err := l.Acquire(bg)
			if err == nil {
				tk.Ignore()
			}
			queued <- err
		}()
		synctest.Wait() // queued, queuedBit set

		l.q.Lock()
		released := make(chan struct{})
		go func() {
			defer close(released)
			tk.Ignore() // none in flight, queuedBit set; then waits for the lock
		}()
		for inflightOf(l.state.Load()) != 0 {
			runtime.Gosched() // let the release make its Add
		}
		var p any
		func() {
			defer func() { p = recover() }()
			cp.Ignore() // the second finish
		}()
		l.q.Unlock()
		<-released

		if s, ok := p.(string); !ok || !strings.Contains(s, "finished twice") {
			t.Errorf("the second finish of a Ticket, with a caller queued, panicked with %v; want \"adaptive: Ticket finished twice\"", p)
		}
		if err := <-queued; err != nil {
			t.Errorf("the queued Acquire = %v; want the slot the first finish freed", err)
		}
		if n := l.InFlight(); n != 0 {
			t.Fatalf("InFlight() = %d after every Ticket was finished; want 0", n)
		}
		tk2, err := l.Acquire(bg)
		if err != nil {
			t.Fatalf("Acquire on an idle Limiter = %v", err)
		}
		tk2.Ignore()
	})
}
