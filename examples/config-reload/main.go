// Command config-reload keeps a service's configuration up to date while it
// runs: a reloader reads a file every 100ms and publishes each new
// configuration in a ctxsync.Watch; workers range over the Watch's Changes and
// pick up each one, without polling and without a list of subscribers.
//
// A worker that is busy when a change comes does not hold up the reloader or
// the other workers, and does not queue the changes it missed: when it comes
// back it gets the latest configuration, skipping those in between. A broken
// file is refused and the last good configuration stays. At shutdown the
// Watch is closed: each worker's loop ends once it has seen the last value.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ctxsync/ctxsync"
)

func main() { run(os.Stdout) }

// config is what the file holds: one "limit=N" line.
type config struct{ limit int }

func parse(text string) (config, error) {
	v, ok := strings.CutPrefix(strings.TrimSpace(text), "limit=")
	if !ok {
		return config{}, fmt.Errorf("no limit= line")
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		return config{}, fmt.Errorf("limit %q is not a positive number", v)
	}
	return config{limit: n}, nil
}

// reload reads path every period and stores each new, valid configuration in
// cfg, until ctx ends. Rereading an unchanged file stores nothing, so workers
// are woken only by real changes.
func reload(ctx context.Context, tl *timeline, path string, cfg *ctxsync.Watch[config], period time.Duration) {
	last, _ := os.ReadFile(path)
	tick := time.NewTicker(period)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		text, err := os.ReadFile(path)
		if err != nil || string(text) == string(last) {
			continue
		}
		last = text
		c, err := parse(string(text))
		if err != nil {
			cur, _ := cfg.Load()
			tl.Printf("reloader: refused (%v); limit=%d stays", err, cur.limit)
			continue
		}
		cfg.Store(c)
		_, ver := cfg.Load() // the only writer: this is the version just stored
		tl.Printf("reloader: limit=%d published as version %d", c.limit, ver)
	}
}

// work applies each configuration it sees; applying takes apply.
func work(tl *timeline, name string, cfg *ctxsync.Watch[config], apply time.Duration) {
	for c := range cfg.Changes(context.Background()) {
		tl.Printf("%s: now using limit=%d", name, c.limit)
		time.Sleep(apply)
	}
	tl.Printf("%s: configuration closed, stopping", name)
}

func run(w io.Writer) {
	tl := newTimeline(w)
	dir, err := os.MkdirTemp("", "config-reload")
	if err != nil {
		fmt.Fprintln(w, err)
		return
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "service.conf")
	write := func(text string) {
		if err := os.WriteFile(path, []byte(text+"\n"), 0o644); err != nil {
			tl.Printf("admin: %v", err)
			return
		}
		tl.Printf("admin: writes %q", text)
	}

	write("limit=10")
	text, _ := os.ReadFile(path)
	first, err := parse(string(text))
	if err != nil {
		tl.Printf("%v", err)
		return
	}
	cfg := ctxsync.NewWatch(first) // version 1

	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { reload(ctx, tl, path, cfg, 100*time.Millisecond) })
	wg.Go(func() { work(tl, "fast worker", cfg, 10*time.Millisecond) })
	wg.Go(func() { work(tl, "slow worker", cfg, 370*time.Millisecond) })

	// The admin edits the file; the reloader sees each edit at its next
	// tick. The slow worker is busy from 0 to 370ms, and misses limit=20.
	for _, edit := range []struct {
		at   time.Duration
		text string
	}{
		{150 * time.Millisecond, "limit=20"},
		{250 * time.Millisecond, "limit=30"},
		{450 * time.Millisecond, "limit=lots"},
		{550 * time.Millisecond, "limit=40"},
	} {
		time.Sleep(edit.at - tl.since())
		write(edit.text)
	}

	time.Sleep(800*time.Millisecond - tl.since())
	tl.Printf("shutdown: the reloader stops, the configuration is closed")
	stop()
	cfg.Close() // the workers end once they have seen the latest value
	wg.Wait()
	c, ver := cfg.Load() // Load still works after Close
	tl.Printf("last configuration: limit=%d, version %d", c.limit, ver)
}

// timeline prints lines stamped with the time since the start.
type timeline struct {
	mu    sync.Mutex
	w     io.Writer
	start time.Time
}

func newTimeline(w io.Writer) *timeline { return &timeline{w: w, start: time.Now()} }

func (t *timeline) since() time.Duration { return time.Since(t.start) }

// Printf prints one line, stamped.
func (t *timeline) Printf(format string, args ...any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	ms := time.Since(t.start).Milliseconds()
	fmt.Fprintf(t.w, "[%5dms] %s\n", ms, fmt.Sprintf(format, args...))
}
