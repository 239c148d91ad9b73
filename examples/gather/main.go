// Command gather fetches several pages at once, as asyncio.gather does:
// group.Map returns the bodies in the order of the URLs, whatever order the
// fetches end in, and the first failure cancels the fetches still running.
// group.MapAll runs every fetch to its end and reports each error at its
// URL's index, as gather(..., return_exceptions=True) does.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/ctxsync/ctxsync/group"
)

func main() { run(os.Stdout) }

// page is what the fake web serves at a URL, and how long it takes.
type page struct {
	delay time.Duration
	body  string
}

var web = map[string]page{
	"https://example.com/a": {300 * time.Millisecond, "apples"},
	"https://example.com/b": {100 * time.Millisecond, "bananas"},
	"https://example.com/c": {200 * time.Millisecond, "cherries"},
	"https://example.com/d": {150 * time.Millisecond, ""}, // answers 500
}

// fetch pretends to fetch url: it takes the page's delay, unless ctx ends.
func fetch(ctx context.Context, tl *timeline, url string) (string, error) {
	p, ok := web[url]
	if !ok {
		p.delay = 50 * time.Millisecond // a quick 404
	}
	select {
	case <-time.After(p.delay):
	case <-ctx.Done():
		tl.Printf("  %s: cancelled", url)
		return "", ctx.Err()
	}
	switch {
	case !ok:
		tl.Printf("  %s: 404", url)
		return "", fmt.Errorf("%s: 404 Not Found", url)
	case p.body == "":
		tl.Printf("  %s: 500", url)
		return "", fmt.Errorf("%s: 500 Internal Server Error", url)
	}
	tl.Printf("  %s: %q", url, p.body)
	return p.body, nil
}

func run(w io.Writer) {
	tl := newTimeline(w)
	ctx := context.Background()
	get := func(ctx context.Context, url string) (string, error) { return fetch(ctx, tl, url) }

	tl.Println("Map: three pages at once; the results come back in the order asked")
	urls := []string{"https://example.com/a", "https://example.com/b", "https://example.com/c"}
	bodies, err := group.Map(ctx, urls, 0, get)
	report(tl, bodies, err)

	tl.Println("Map: the first failure cancels the fetches still running")
	urls = []string{"https://example.com/a", "https://example.com/d", "https://example.com/c"}
	bodies, err = group.Map(ctx, urls, 0, get)
	report(tl, bodies, err)

	tl.Println("MapAll: every fetch runs to its end, each error at its index")
	urls = []string{"https://example.com/a", "https://example.com/d", "https://example.com/b", "https://example.com/zzz"}
	bodies, errs := group.MapAll(ctx, urls, 2, get) // two at a time
	for i, url := range urls {
		if errs != nil && errs[i] != nil {
			tl.Printf("%d %s: error: %v", i, url, errs[i])
			continue
		}
		tl.Printf("%d %s: %q", i, url, bodies[i])
	}
}

// report prints what Map returned: every body, or the error alone.
func report(tl *timeline, bodies []string, err error) {
	if err != nil {
		tl.Printf("Map failed: %v", err)
		return
	}
	tl.Printf("Map = %q", bodies)
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
