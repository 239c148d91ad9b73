// Command per-domain crawls two sites at once with a Keyed limiter, one token
// bucket per domain: the slow site's limit serialises its fetches without
// holding back the other's.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/ctxsync/ctxsync/ratelimit"
)

func main() { run(os.Stdout) }

func run(w io.Writer) {
	tl := newTimeline(w, time.Millisecond)
	ctx := context.Background()
	// One limiter per domain, made on first use: the small site asks for one
	// request every 500ms; any other gets 50 per second.
	perDomain := ratelimit.NewKeyed(func(domain string) *ratelimit.TokenBucket {
		if domain == "small.example" {
			return ratelimit.NewTokenBucket(2, 1)
		}
		return ratelimit.NewTokenBucket(50, 5)
	}, ratelimit.KeyedConfig{})

	var wg sync.WaitGroup
	for i, domain := range []string{"small.example", "big.example"} {
		wg.Go(func() {
			time.Sleep(time.Duration(i) * time.Millisecond)
			for page := 1; page <= 6; page++ {
				if err := perDomain.WaitN(ctx, domain, 1); err != nil {
					return
				}
				tl.Printf("fetch https://%s/page/%d", domain, page)
			}
			tl.Printf("%s: done", domain)
		})
	}
	wg.Wait()
	fmt.Fprintln(w, "The big site's crawl was never slowed by the small site's limit.")
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
