package redissync

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Regression: a *redis.Ring with ReadTimeout 0 (go-redis's default: each
// shard, a Client, then waits 5 seconds for a reply) was read as a client
// with no read timeout, for which readTimeout takes 3 seconds: the pipe's
// hold, and roundTrip (the delay of a take-back), were shorter than the
// round trips they bound, so a round trip still waiting for its reply lost
// its place, and a late attempt could land after its take-back. A Ring with
// the default waits as a Client with the default does.
func TestReadTimeoutDefaults(t *testing.T) {
	addrs := map[string]string{"a": "127.0.0.1:1"}
	for _, tc := range []struct {
		name string
		c    redis.UniversalClient
		want time.Duration
	}{
		{"Client/default", redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}), 5 * time.Second},
		{"Ring/default", redis.NewRing(&redis.RingOptions{Addrs: addrs}), 5 * time.Second},
		{"ClusterClient/default", redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{"127.0.0.1:1"}}), 5 * time.Second},
		{"Client/2s", redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", ReadTimeout: 2 * time.Second}), 2 * time.Second},
		{"Ring/2s", redis.NewRing(&redis.RingOptions{Addrs: addrs, ReadTimeout: 2 * time.Second}), 2 * time.Second},
		// No timeout at all: the hold's fallback.
		{"Client/none", redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", ReadTimeout: -1}), 3 * time.Second},
		{"Ring/none", redis.NewRing(&redis.RingOptions{Addrs: addrs, ReadTimeout: -1}), 3 * time.Second},
	} {
		t.Cleanup(func() { _ = tc.c.Close() })
		if got := readTimeout(tc.c); got != tc.want {
			t.Errorf("%s: readTimeout = %v; want %v", tc.name, got, tc.want)
		}
	}
}
