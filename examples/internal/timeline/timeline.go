// Package timeline prints the story an example tells, one line per event,
// stamped with the time since the story began. Run inside a testing/synctest
// bubble, the stamps are exact, which lets the examples' tests compare their
// output with golden files.
package timeline

import (
	"fmt"
	"io"
	"sync"
	"time"
)

// A Timeline prints lines to a writer. It is safe for concurrent use.
type Timeline struct {
	mu    sync.Mutex
	w     io.Writer
	start time.Time
	unit  time.Duration
}

// New returns a Timeline that starts now and prints to w, rounding stamps to
// the millisecond.
func New(w io.Writer) *Timeline { return NewRounded(w, time.Millisecond) }

// NewRounded returns a Timeline that rounds its stamps to unit: for a story
// told in real time, whose stamps jitter.
func NewRounded(w io.Writer, unit time.Duration) *Timeline {
	return &Timeline{w: w, start: time.Now(), unit: unit}
}

// Printf prints one line, stamped.
func (t *Timeline) Printf(format string, args ...any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	ms := time.Since(t.start).Round(t.unit).Milliseconds()
	fmt.Fprintf(t.w, "[%5dms] %s\n", ms, fmt.Sprintf(format, args...))
}

// Println prints a line without a stamp.
func (t *Timeline) Println(args ...any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	fmt.Fprintln(t.w, args...)
}
