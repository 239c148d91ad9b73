// Command bounded-buffer is the classic producer/consumer: two producers and
// two consumers share a buffer of three items, with two Conditions on one
// Lock, "not full" for the producers and "not empty" for the consumers.
// Producers wait while the buffer is full; consumers while it is empty.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/ctxsync/ctxsync"
)

func main() { run(os.Stdout) }

// buffer is a bounded buffer of strings.
type buffer struct {
	notFull, notEmpty *ctxsync.Condition // share one Lock
	items             []string           // guarded by the Lock
	closed            bool               // guarded by the Lock: no more puts
	capacity          int
}

func newBuffer(capacity int) *buffer {
	mu := ctxsync.NewLock()
	return &buffer{notFull: ctxsync.NewCondition(mu), notEmpty: ctxsync.NewCondition(mu), capacity: capacity}
}

func (b *buffer) put(ctx context.Context, tl *timeline, who, item string) error {
	if err := b.notFull.Lock(ctx); err != nil {
		return err
	}
	defer b.notFull.Unlock() // Wait returns holding the Lock, whatever happens
	if len(b.items) == b.capacity {
		tl.Printf("%s: the buffer is full, %s waits", who, who)
	}
	if err := b.notFull.WaitFor(ctx, func() bool { return len(b.items) < b.capacity }); err != nil {
		return err
	}
	b.items = append(b.items, item)
	tl.Printf("%s puts %s  %v", who, item, b.items)
	b.notEmpty.Notify(1) // one item: wake one consumer
	return nil
}

// take returns the next item, or false once the buffer is closed and empty.
func (b *buffer) take(ctx context.Context, tl *timeline, who string) (string, bool) {
	if err := b.notEmpty.Lock(ctx); err != nil {
		return "", false
	}
	defer b.notEmpty.Unlock()
	if err := b.notEmpty.WaitFor(ctx, func() bool { return len(b.items) > 0 || b.closed }); err != nil {
		return "", false
	}
	if len(b.items) == 0 {
		return "", false // closed and drained
	}
	item := b.items[0]
	b.items = b.items[1:]
	tl.Printf("%s takes %s %v", who, item, b.items)
	b.notFull.Notify(1) // one slot: wake one producer
	return item, true
}

func (b *buffer) close(ctx context.Context) {
	if b.notEmpty.Lock(ctx) == nil {
		b.closed = true
		b.notEmpty.NotifyAll()
		b.notEmpty.Unlock()
	}
}

func run(w io.Writer) {
	tl := newTimeline(w, time.Millisecond)
	ctx := context.Background()
	b := newBuffer(3)

	var producers, consumers sync.WaitGroup
	for i, name := range []string{"producer A", "producer B"} {
		producers.Go(func() {
			time.Sleep(time.Duration(i) * time.Millisecond)
			for n := 1; n <= 4; n++ {
				if b.put(ctx, tl, name, fmt.Sprintf("%c%d", 'A'+i, n)) != nil {
					return
				}
				time.Sleep(2 * time.Millisecond) // producing is quick
			}
		})
	}
	for i, name := range []string{"consumer 1", "consumer 2"} {
		consumers.Go(func() {
			time.Sleep(time.Duration(10+5*i) * time.Millisecond)
			for {
				if _, ok := b.take(ctx, tl, name); !ok {
					return
				}
				time.Sleep(10 * time.Millisecond) // consuming is slow
			}
		})
	}
	producers.Wait()
	b.close(ctx)
	consumers.Wait()
	tl.Println("Eight items made, eight taken; the buffer never held more than three.")
}

// A timeline prints the story one line per event, stamped with the time since
// it began, rounded to unit. The example's test runs it in a testing/synctest
// bubble, where time is virtual and the stamps exact. It is safe for
// concurrent use.
type timeline struct {
	mu    sync.Mutex
	w     io.Writer
	start time.Time
	unit  time.Duration
}

func newTimeline(w io.Writer, unit time.Duration) *timeline {
	return &timeline{w: w, start: time.Now(), unit: unit}
}

// Printf prints one line, stamped.
func (t *timeline) Printf(format string, args ...any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	ms := time.Since(t.start).Round(t.unit).Milliseconds()
	fmt.Fprintf(t.w, "[%5dms] %s\n", ms, fmt.Sprintf(format, args...))
}

// Println prints a line without a stamp.
func (t *timeline) Println(args ...any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	fmt.Fprintln(t.w, args...)
}
