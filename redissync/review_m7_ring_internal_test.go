package redissync

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Regression: honoursDeadlines and readTimeout know *redis.Client and
// *redis.ClusterClient only. A *redis.Ring (a UniversalClient, which
// redis.NewUniversalClient does not make but users may pass) with
// ContextTimeoutEnabled ends its round trips at the ctx's deadline (every
// shard is a Client made with the Ring's flag), yet it was taken for a
// client that may never end one: its pipe got a hold, so a timer and a
// place allocated on every round trip, and each round trip of a caller's
// own ran in a goroutine of its own. Without the flag, the Ring's
// ReadTimeout was ignored: the hold (and roundTrip, the take-back's delay)
// was the 3-second fallback whatever the Ring waits for a reply, so a round
// trip still waiting for its reply lost its place early, and a late attempt
// could land after its take-back. Right: a Ring is read as a Client is.
func TestReviewM7_RingDeadlinesAndReadTimeout(t *testing.T) {
	honouring := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": "127.0.0.1:1"},
		ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = honouring.Close() })
	s, err := New(Config{Client: honouring, Name: "ring", N: 1, Lease: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if !s.ctxTimeouts || s.pipe.hold != 0 {
		t.Errorf("Ring with ContextTimeoutEnabled: ctxTimeouts = %v, hold = %v; want true, 0 (no timer per round trip)",
			s.ctxTimeouts, s.pipe.hold)
	}
	k, err := NewKeyedLock(Config{Client: honouring, Name: "ring", N: 1, Lease: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if k.pipe.hold != 0 {
		t.Errorf("Keyed on a Ring with ContextTimeoutEnabled: hold = %v; want 0", k.pipe.hold)
	}

	slow := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": "127.0.0.1:1"},
		ReadTimeout: 10 * time.Second})
	t.Cleanup(func() { _ = slow.Close() })
	s, err = New(Config{Client: slow, Name: "ring", N: 1, Lease: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if s.pipe.hold != 10*time.Second || s.roundTrip != 10*time.Second {
		t.Errorf("Ring with ReadTimeout 10s: hold = %v, roundTrip = %v; want 10s each", s.pipe.hold, s.roundTrip)
	}
}
