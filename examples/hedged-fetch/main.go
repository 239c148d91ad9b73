// Command hedged-fetch shows hedged HTTP requests with retry.Transport.
//
// A service's replicas usually answer in about 20ms, but now and then one
// stalls for 300ms or more (a GC pause, a cold cache). Waiting for it makes
// the caller's slowest requests as slow as the slowest replica. With a
// Hedge, the Transport sends a copy of a GET that has not answered after
// Delay, takes whichever response comes first, cancels the other and
// closes its body. A shared Budget caps the copies to a share of the
// requests, so that a service slow for everyone is not sent twice the
// load; and a POST, which is not safe to send twice, is never copied.
//
// Here Delay is fixed, so that the story is easy to follow; with Delay 0 it
// would follow the replicas' 95th percentile of latency as it moves.
package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ctxsync/ctxsync/retry"
)

func main() { run(os.Stdout) }

// replicas answers each request after a latency drawn from a fixed script
// (first attempts) or 20ms (copies), unless the request's ctx ends first.
type replicas struct {
	firsts []time.Duration // the latency of each request's first attempt
	sent   atomic.Int32    // attempts sent
	logf   func(string, ...any)

	mu   sync.Mutex
	seen map[string]bool // requests whose first attempt has come; guarded by mu
}

func (r *replicas) RoundTrip(req *http.Request) (*http.Response, error) {
	r.sent.Add(1)
	d := 20 * time.Millisecond
	id := req.URL.Query().Get("id")
	r.mu.Lock()
	copied := r.seen[id]
	r.seen[id] = true
	r.mu.Unlock()
	if !copied {
		// The request's first attempt: its latency comes from the script.
		i, _ := strconv.Atoi(id)
		d = r.firsts[i]
	}
	select {
	case <-time.After(d):
	case <-req.Context().Done():
		r.logf("request %s: the slow attempt is cancelled", id)
		return nil, req.Context().Err()
	}
	who := "first attempt"
	if copied {
		who = "copy"
	}
	return &http.Response{
		StatusCode: http.StatusOK,
		Body:       io.NopCloser(strings.NewReader("answer from the " + who)),
		Request:    req,
	}, nil
}

func run(w io.Writer) {
	start := time.Now()
	logf := func(format string, args ...any) {
		fmt.Fprintf(w, "[%5dms] %s\n", time.Since(start).Milliseconds(), fmt.Sprintf(format, args...))
	}
	base := &replicas{
		seen: map[string]bool{},
		firsts: []time.Duration{
			20 * time.Millisecond, 18 * time.Millisecond, 300 * time.Millisecond, 22 * time.Millisecond,
			19 * time.Millisecond, 21 * time.Millisecond, 400 * time.Millisecond, 20 * time.Millisecond,
		},
		logf: logf,
	}
	client := &http.Client{Transport: &retry.Transport{
		Base: base,
		Hedge: &retry.Hedge{
			Delay:  50 * time.Millisecond,
			Budget: retry.NewBudget(0.1, 1), // copies: 10% of requests, plus 1 a second
		},
	}}
	ctx := context.Background()
	for i := range base.firsts {
		t0 := time.Now()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://replicas.example/?id=%d", i), nil)
		resp, err := client.Do(req)
		if err != nil {
			logf("request %d: %v", i, err)
			continue
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		logf("request %d: %s in %v", i, body, time.Since(t0))
	}
	logf("%d requests, %d attempts sent", len(base.firsts), base.sent.Load())

	// A POST without an Idempotency-Key is sent once, however slow.
	base.mu.Lock()
	base.seen = map[string]bool{}
	base.mu.Unlock()
	base.firsts = []time.Duration{300 * time.Millisecond}
	t0 := time.Now()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://replicas.example/?id=0", strings.NewReader("pay 10€"))
	resp, err := client.Do(req)
	if err != nil {
		logf("POST: %v", err)
		return
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	logf("POST: %s in %v, not copied: it is not safe to send twice", body, time.Since(t0))
}
