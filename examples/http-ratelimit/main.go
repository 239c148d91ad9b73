// Command http-ratelimit puts the rate-limit middleware in front of an HTTP
// handler, and shows what a client sees: the rate-limit headers on every
// response, and 429 with Retry-After once it exceeds its allowance.
package main

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"

	"github.com/ctxsync/ctxsync/ratelimit"
)

func main() { run(os.Stdout) }

func run(w io.Writer) {
	// Each client address may make 3 requests at once, then one a minute.
	perClient := ratelimit.NewKeyed(func(string) *ratelimit.TokenBucket {
		return ratelimit.NewTokenBucket(1.0/60, 3)
	}, ratelimit.KeyedConfig{})
	hello := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "hello") })
	srv := httptest.NewServer(ratelimit.Middleware(perClient, ratelimit.MiddlewareConfig{Policy: "per-client"})(hello))
	defer srv.Close()

	for i := 1; i <= 4; i++ {
		resp, err := http.Get(srv.URL)
		if err != nil {
			fmt.Fprintln(w, err)
			return
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		fmt.Fprintf(w, "request %d: %s\n", i, resp.Status)
		for _, h := range []string{"RateLimit-Policy", "RateLimit", "X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset", "Retry-After"} {
			if v := resp.Header.Get(h); v != "" {
				fmt.Fprintf(w, "  %s: %s\n", h, v)
			}
		}
	}
}
