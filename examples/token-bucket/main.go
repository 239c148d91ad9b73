// Command token-bucket sends 20 requests through a token bucket of rate 10
// per second and burst 5: the first 5 go at once, then one every 100
// milliseconds, the last at 1.5 seconds.
package main

import (
	"context"
	"io"
	"os"

	"github.com/ctxsync/ctxsync/examples/internal/timeline"
	"github.com/ctxsync/ctxsync/ratelimit"
)

func main() { run(os.Stdout) }

func run(w io.Writer) {
	tl := timeline.New(w)
	limiter := ratelimit.NewTokenBucket(10, 5) // 10 per second, bursts of 5
	ctx := context.Background()
	for i := 1; i <= 20; i++ {
		if err := limiter.Wait(ctx); err != nil {
			return
		}
		tl.Printf("request %2d sent (tokens left: %.0f)", i, limiter.Tokens())
	}
	tl.Println("5 at once from the full bucket, then the steady rate: all 20 in 1.5s.")
}
