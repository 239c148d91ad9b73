package redislimit

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// clusterRedis starts a redis-server in cluster mode that holds every slot
// (a cluster of one node, which checks that a command's keys share a slot as
// any cluster does), and returns a ClusterClient of it; it skips the test
// without a redis-server on the PATH.
func clusterRedis(t *testing.T) *redis.ClusterClient {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("no redis-server on the PATH")
	}
	port := freePort(t)
	cmd := exec.Command("redis-server", "--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--protected-mode", "no",
		"--cluster-enabled", "yes", "--cluster-config-file", filepath.Join(t.TempDir(), "nodes.conf"))
	require.NoError(t, cmd.Start())
	p := &redisProcess{addr: "127.0.0.1:" + strconv.Itoa(port), port: port, cmd: cmd}
	t.Cleanup(p.stop)
	node := redis.NewClient(&redis.Options{Addr: p.addr, MaxRetries: -1})
	defer node.Close()
	ctx := context.Background()
	deadline := time.Now().Add(10 * time.Second)
	for node.Ping(ctx).Err() != nil {
		require.False(t, time.Now().After(deadline), "redis-server did not come up")
		time.Sleep(10 * time.Millisecond)
	}
	require.NoError(t, node.Do(ctx, "CLUSTER", "ADDSLOTSRANGE", 0, 16383).Err())
	for {
		info, err := node.ClusterInfo(ctx).Result()
		if err == nil && strings.Contains(info, "cluster_state:ok") {
			break
		}
		require.False(t, time.Now().After(deadline), "the cluster did not come up: %q, %v", info, err)
		time.Sleep(10 * time.Millisecond)
	}
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{p.addr}, MaxRedirects: 1})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// A key whose hash tag is empty breaks Config.Limits on Redis Cluster: the
// package doc says that keys carry a hash tag, "prefix{key}", so that the
// limiter works on Redis Cluster, and Config.Limits that each limit's key is
// "in the same hash slot". But Redis Cluster reads the tag between the first
// "{" and the first "}" after it, and hashes the whole key when that is
// empty: for a key that begins with "}" (a key a client may choose: an API
// key from a header, say), "ratelimit:{}x}" and "ratelimit:{}x}:2" fall in
// different slots, the script fails with CROSSSLOT at every call, and the
// call follows the Policy: with FailOpen, the default, such a key is never
// limited at all. Every key must be limited, in one slot, as "x" is.
//
// Skipped: the fix changes the key layout that the package doc states
// ("prefix{key}") for the keys it breaks (and, to stay one to one, for
// some others), which is for the maintainers to decide: see the report.
func TestReview11ClusterKeysShareASlot(t *testing.T) {
	t.Skip("Config.Limits on Redis Cluster fails with CROSSSLOT for keys that begin with '}': the fix changes the documented key layout")
	c := clusterRedis(t)
	l := newLimiter(t, Config{Client: c, Rate: 1e-3, Burst: 2, Limits: []Limit{{Rate: 1e-3, Burst: 3}}, Policy: FailOpen})
	ctx := context.Background()
	for _, key := range []string{"x", "}x", "}", "}}", "a}b", "{", "{}", " \n"} {
		for i := range 2 {
			d, err := l.TakeContext(ctx, key, 1)
			require.NoError(t, err, "key %q, event %d", key, i+1)
			require.True(t, d.Allowed, "key %q, event %d", key, i+1)
		}
		d, err := l.TakeContext(ctx, key, 1)
		require.NoError(t, err, "key %q, past the burst", key)
		require.False(t, d.Allowed, "key %q: past the burst of 2, allowed", key)
	}
	require.Zero(t, l.Failures())
}

// TestReview11ClusterRoundTrips: on Redis Cluster (a ClusterClient), keys
// whose hash tag is not empty are limited exactly, one limit or several,
// through lone round trips and pipelines, across a SCRIPT FLUSH of every
// node, and Reset works.
func TestReview11ClusterRoundTrips(t *testing.T) {
	c := clusterRedis(t)
	ctx := context.Background()
	for _, limits := range [][]Limit{nil, {{Rate: 1e-3, Burst: 30}}} {
		l := newLimiter(t, Config{Client: c, Rate: 1e-3, Burst: 20, MaxRoundTrips: 1, Limits: limits,
			Prefix: fmt.Sprintf("cluster%d:", len(limits))})
		var granted atomic.Int64
		var wg sync.WaitGroup
		for g := range 16 {
			wg.Go(func() {
				for i := range 10 {
					if g == 0 && i == 5 {
						assert.NoError(t, c.ForEachShard(ctx, func(ctx context.Context, s *redis.Client) error {
							return s.ScriptFlush(ctx).Err()
						}))
					}
					d, err := l.TakeContext(ctx, fmt.Sprintf("k%d", i%3), 1)
					assert.NoError(t, err)
					if d.Allowed {
						granted.Add(1)
					}
				}
			})
		}
		wg.Wait()
		require.EqualValues(t, 3*20, granted.Load(), "Limits %v: 3 keys, bursts of 20", limits)
		require.NoError(t, l.Reset(ctx, "k1"))
		d, err := l.TakeContext(ctx, "k1", 20)
		require.NoError(t, err)
		require.True(t, d.Allowed, "a whole burst after Reset")
		require.Zero(t, l.Failures())
	}
}
