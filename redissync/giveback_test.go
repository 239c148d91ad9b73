package redissync

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redis/go-redis/v9"
)

// stalledRedis is a client hook that stands for a Redis that has stopped
// answering, as a client with ContextTimeoutEnabled sees it: each command
// ends at its ctx's deadline, and not before, whatever cancels the ctx. No
// command reaches the network, so the client may be used in a synctest
// bubble.
type stalledRedis struct {
	ended atomic.Int64 // commands that have ended
}

func (h *stalledRedis) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *stalledRedis) ProcessHook(redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, _ redis.Cmder) error {
		defer h.ended.Add(1)
		d, ok := ctx.Deadline()
		if !ok {
			return errors.New("stalledRedis: a command without a deadline would wait for good")
		}
		time.Sleep(time.Until(d))
		return errors.New("stalledRedis: i/o timeout")
	}
}

func (h *stalledRedis) ProcessPipelineHook(redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(context.Context, []redis.Cmder) error { return errors.New("stalledRedis: no pipelines") }
}

// stalledClient returns a client with ContextTimeoutEnabled whose commands
// all stall, and its hook.
func stalledClient(t *testing.T) (*redis.Client, *stalledRedis) {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = c.Close() })
	h := new(stalledRedis)
	c.AddHook(h)
	return c, h
}

// TestGiveUpReturnsWithinOneTimeout: an Acquire that gives up while Redis
// does not answer returns within the Timeout of the round trip it gave up,
// and gives back what it may have left in Redis in the background. With
// Redis stopped, an Acquire cancelled at 100ms (Lease 600ms, Timeout 150ms)
// returned at about 300ms: its attempt ran to its Timeout, as such a client
// ends round trips at deadlines only, then giving its place back took
// another. So did one whose attempt timed out (ErrUnavailable), one whose
// deadline passed during its attempt, and TryAcquire. Virtual time: the
// durations are exact.
func TestGiveUpReturnsWithinOneTimeout(t *testing.T) {
	const lease, timeout = 600 * time.Millisecond, 150 * time.Millisecond
	for _, n := range []int{1, 2} {
		for _, how := range []string{"cancelled", "deadline", "unavailable", "TryAcquire"} {
			t.Run(fmt.Sprintf("N=%d/%s", n, how), func(t *testing.T) {
				c, h := stalledClient(t)
				synctest.Test(t, func(t *testing.T) {
					s := mustNew(t, Config{Client: c, Name: "stalled", N: n, Lease: lease, Timeout: timeout})
					ctx, cancel := context.WithCancel(context.Background())
					defer cancel()
					want := ErrUnavailable
					switch how {
					case "cancelled":
						time.AfterFunc(100*time.Millisecond, cancel)
						want = context.Canceled
					case "deadline":
						ctx, cancel = context.WithTimeout(ctx, 100*time.Millisecond)
						defer cancel()
						want = context.DeadlineExceeded
					}
					start := time.Now()
					var p *Permit
					var err error
					if how == "TryAcquire" {
						p, err = s.TryAcquire(ctx)
					} else {
						p, err = s.Acquire(ctx)
					}
					elapsed, ended := time.Since(start), h.ended.Load()
					if p != nil || !errors.Is(err, want) {
						t.Fatalf("= %v, %v; want no permit and %v", p != nil, err, want)
					}
					// The attempt's round trip, and for a deadline before
					// the Timeout's end, the give-back in the time left.
					trips := int64(1)
					if how == "deadline" {
						trips = 2
					}
					if elapsed > timeout || ended != trips {
						t.Errorf("returned after %v and %d round trips; want at most the Timeout, %v, and %d", elapsed, ended, timeout, trips)
					}
					// The place given back in the background, and the
					// attempt given up taken back after the client's
					// ReadTimeout: the bubble ends once they have.
					time.Sleep(s.roundTrip + timeout)
				})
				if got := h.ended.Load(); got < 2 {
					t.Errorf("%d round trips in all; want the attempt's and the give-back's at least", got)
				}
			})
		}
	}
}
