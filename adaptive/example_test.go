package adaptive_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/ctxsync/ctxsync/adaptive"
)

// A Limiter in front of a call: the Ticket tells it how the call went. Here
// the limit is pinned at 2 and nothing queues, to show a call shed.
func ExampleLimiter() {
	lim := adaptive.New(adaptive.Config{InitialLimit: 2, MinLimit: 2, MaxLimit: 2, MaxWait: adaptive.NoWait})
	ctx := context.Background()

	a, _ := lim.Acquire(ctx)
	b, _ := lim.Acquire(ctx)
	_, err := lim.Acquire(ctx)
	fmt.Println("third call:", err, errors.Is(err, adaptive.ErrShed))
	fmt.Println("in flight:", lim.InFlight(), "of", lim.Limit())

	a.Done(nil)                             // answered: its latency is a sample
	b.Done(errors.New("503 from upstream")) // overloaded: lowers the limit
	fmt.Println("in flight:", lim.InFlight(), "shed:", lim.Shed())
	// Output:
	// third call: adaptive: call shed true
	// in flight: 2 of 2
	// in flight: 0 shed: 1
}

// A Ticket must be finished exactly once: Ignore for a call that says nothing
// of the service's load.
func ExampleTicket_Ignore() {
	lim := adaptive.New(adaptive.Config{})
	t, err := lim.Acquire(context.Background())
	if err != nil {
		return
	}
	// The request was malformed: the service rejected it at once, which
	// says nothing of its load.
	t.Ignore()
	fmt.Println(lim.InFlight())
	// Output: 0
}

// A Config read from outside the program is checked with Validate, rather
// than let New panic.
func ExampleConfig_Validate() {
	cfg := adaptive.Config{MinLimit: 10, MaxLimit: 5}
	fmt.Println(cfg.Validate())
	// Output: adaptive: Config with MaxLimit 5 below MinLimit 10
}

// Middleware answers the requests past the limit with 503 and Retry-After.
func ExampleMiddleware() {
	lim := adaptive.New(adaptive.Config{InitialLimit: 1, MinLimit: 1, MaxLimit: 1, MaxWait: adaptive.NoWait})
	busy := make(chan struct{})
	release := make(chan struct{})
	h := adaptive.Middleware(lim)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(busy)
		<-release
		fmt.Fprintln(w, "hello")
	}))
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil))
	}()
	<-busy // the only slot is taken
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	fmt.Println(rec.Code, "Retry-After:", rec.Header().Get("Retry-After"))
	close(release)
	<-done
	// Output: 503 Retry-After: 1
}

// Transport holds an http.Client's requests to what the service answers in
// time, and sheds the rest before they are sent.
func ExampleTransport() {
	backend := roundTripper(func(*http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody}, nil
	})
	tr := &adaptive.Transport{Base: backend, Limiter: adaptive.New(adaptive.Config{})}
	if err := tr.Check(); err != nil {
		fmt.Println(err)
		return
	}
	client := &http.Client{Transport: tr}
	resp, err := client.Get("http://service.example/items")
	if err != nil {
		fmt.Println(err)
		return
	}
	resp.Body.Close()
	fmt.Println(resp.StatusCode, tr.Limiter.InFlight())
	// Output: 200 0
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
