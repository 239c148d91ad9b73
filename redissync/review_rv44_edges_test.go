package redissync

import (
	"context"
	"errors"
	"fmt"
	"math"
	"testing"
	"time"
)

// TestKeyedConfigEdges: a Keyed of a Timeout at its least (1 ns, 1 µs) and
// of 1 ms, of 1, 2 and math.MaxInt permits per key, over clients that honour
// deadlines and that do not. Each call either gets a permit, which it gives
// back, or fails with an error matching ErrUnavailable (a Timeout too short
// for any round trip); either way the Keyed keeps no key, and Redis keeps
// nothing held or queued once the round trips given up have ended.
func TestKeyedConfigEdges(t *testing.T) {
	b := ownRedis(t)
	ctx := context.Background()
	for _, ctxTimeouts := range []bool{false, true} {
		c := b.strictClient(t, ctxTimeouts)
		for _, timeout := range []time.Duration{1, time.Microsecond, time.Millisecond} {
			for _, n := range []int{1, 2, math.MaxInt} {
				name := fmt.Sprintf("edge-%v-%v-%d", ctxTimeouts, timeout, n)
				t.Run(name, func(t *testing.T) {
					k, err := NewKeyed(Config{Client: c, Name: name, N: n, Lease: time.Second, Timeout: timeout})
					if err != nil {
						t.Fatal(err)
					}
					for _, try := range []bool{false, true} {
						var p *Permit
						if try {
							p, err = k.TryAcquire(ctx, "k")
						} else {
							p, err = k.Acquire(ctx, "k")
						}
						switch {
						case err == nil && p != nil:
							if err := p.Release(ctx); err != nil && !errors.Is(err, ErrUnavailable) {
								t.Errorf("Release: %v", err)
							}
						case err != nil && p == nil && errors.Is(err, ErrUnavailable):
						default:
							t.Fatalf("(TryAcquire: %v) %v, %v; want a Permit, or an error matching ErrUnavailable", try, p, err)
						}
					}
					awaitKeyedIdle(t, k, "after the calls")
					// A round trip given up may still land: its take-back
					// follows it, within the client's ReadTimeout (1 s).
					s := k.newSemaphore(k.name, "k")
					for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
						held, queued := counts(t, s)
						if held == 0 && queued == 0 {
							break
						}
						if time.Now().After(deadline) {
							t.Fatalf("10 s after the calls: %d held, %d queued", held, queued)
						}
					}
				})
			}
		}
	}
}
