// Command batch shows the two shapes of bulk work with package group.
//
// A batch: records are written to a database in chunks of four, two chunks at
// a time; slices.Chunk makes the chunks and group.ForEach bounds the writes.
//
// A stream: events come from an iterator that may never end. group.ForEach
// pulls an event only when a worker slot is free for it, so memory stays
// bounded however long the stream is, no event is pulled and then dropped,
// and the first failure stops the pulling.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/ctxsync/ctxsync/group"
)

func main() { run(os.Stdout) }

func run(w io.Writer) {
	tl := newTimeline(w)
	ctx := context.Background()

	tl.Println("Batch: ten records, written four at a time, two writes at once")
	records := make([]string, 10)
	for i := range records {
		records[i] = fmt.Sprintf("r%d", i+1)
	}
	err := group.ForEach(ctx, slices.Chunk(records, 4), 2, func(ctx context.Context, chunk []string) error {
		tl.Printf("  INSERT %v", chunk)
		time.Sleep(time.Duration(25*len(chunk)) * time.Millisecond) // one round trip per chunk
		tl.Printf("  inserted %d rows", len(chunk))
		return nil
	})
	tl.Printf("batch done: %v", err)

	tl.Println("Stream: events pulled as slots free up, three in flight; event 7 is bad")
	errBadEvent := errors.New("malformed event")
	err = group.ForEach(ctx, events(tl), 3, func(ctx context.Context, n int) error {
		time.Sleep(100 * time.Millisecond) // handling an event
		if n == 7 {
			tl.Printf("  event %d: %v", n, errBadEvent)
			return fmt.Errorf("event %d: %w", n, errBadEvent)
		}
		tl.Printf("  event %d handled", n)
		return nil
	})
	tl.Printf("stream stopped: %v", err)
	tl.Println("No event was pulled before a slot was free for it, so none was pulled and dropped;")
	tl.Println("events 8 and 9, in flight, were handled before ForEach returned.")
}

// events is an endless stream of event numbers, arriving every 10ms; it says
// when each is pulled.
func events(tl *timeline) iter.Seq[int] {
	return func(yield func(int) bool) {
		for n := 1; ; n++ {
			time.Sleep(10 * time.Millisecond)
			tl.Printf("pulled event %d", n)
			if !yield(n) {
				tl.Printf("the stream is told to stop")
				return
			}
		}
	}
}

// A timeline prints the story one line per event, stamped with the time since
// it began. The example's test runs it in a testing/synctest bubble, where
// time is virtual and the stamps exact. It is safe for concurrent use.
type timeline struct {
	mu    sync.Mutex
	w     io.Writer
	start time.Time
}

func newTimeline(w io.Writer) *timeline { return &timeline{w: w, start: time.Now()} }

// Printf prints one line, stamped.
func (t *timeline) Printf(format string, args ...any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	ms := time.Since(t.start).Milliseconds()
	fmt.Fprintf(t.w, "[%5dms] %s\n", ms, fmt.Sprintf(format, args...))
}

// Println prints a line without a stamp.
func (t *timeline) Println(args ...any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	fmt.Fprintln(t.w, args...)
}
