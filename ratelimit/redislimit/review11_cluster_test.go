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
// limited at all. Every key must be limited, in one slot, as "x" is: such
// keys, the empty one and those that begin with a zero byte go between the
// braces after a zero byte (see tagOf).
func TestReview11ClusterKeysShareASlot(t *testing.T) {
	c := clusterRedis(t)
	l := newLimiter(t, Config{Client: c, Rate: 1e-3, Burst: 2, Limits: []Limit{{Rate: 1e-3, Burst: 3}}, Policy: FailOpen})
	ctx := context.Background()
	for _, key := range []string{"x", "}x", "}", "}}", "a}b", "{", "{}", " \n", "", "\x00", "\x00}x"} {
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

// A Prefix that empties the hash tag (its first "{" followed at once by "}")
// would fail every call of a ClusterClient with Limits with CROSSSLOT: New
// refuses it there, and nowhere else (one key per call, or one node, works).
func TestClusterPrefixEmptyingTheTagRefused(t *testing.T) {
	cluster := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{"127.0.0.1:1"}})
	defer cluster.Close()
	node := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer node.Close()
	limits := []Limit{{Rate: 1, Burst: 2}}
	for _, tc := range []struct {
		prefix string
		bad    bool
	}{{"a{}b:", true}, {"{}", true}, {"a}{}", true}, {"a{b}{}", false}, {"a{", false}, {"}{x}", false}, {"a}", false}} {
		_, err := New(Config{Client: cluster, Rate: 1, Burst: 1, Prefix: tc.prefix, Limits: limits})
		if tc.bad {
			require.ErrorContains(t, err, "redislimit: bad Config: Prefix", "prefix %q", tc.prefix)
		} else {
			require.NoError(t, err, "prefix %q", tc.prefix)
		}
		_, err = New(Config{Client: cluster, Rate: 1, Burst: 1, Prefix: tc.prefix})
		require.NoError(t, err, "prefix %q without Limits", tc.prefix)
		_, err = New(Config{Client: node, Rate: 1, Burst: 1, Prefix: tc.prefix, Limits: limits})
		require.NoError(t, err, "prefix %q on one node", tc.prefix)
	}
}

// clusterTag returns the part of a Redis key that Redis Cluster hashes:
// between the first "{" and the first "}" after it, if that is not empty;
// else the whole key.
func clusterTag(key string) string {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			return key[i+1 : i+1+j]
		}
	}
	return key
}

// FuzzKeyTag: every key's Redis keys, its own and those of its Limits, share
// a non-empty hash tag, under any Prefix that does not empty it; and no two
// keys share a Redis key.
func FuzzKeyTag(f *testing.F) {
	for _, k := range []string{"", "x", "}", "}x", "\x00", "\x00}", "a}b", "{", "{}", "{a}"} {
		f.Add(k, "x", "ratelimit:")
	}
	f.Add("a", "\x00a", "p{")
	f.Add("}", "\x00}", "p{q}")
	node := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	f.Cleanup(func() { node.Close() })
	f.Fuzz(func(t *testing.T, a, b, prefix string) {
		if emptiesTag(prefix) || prefix == "" {
			t.Skip()
		}
		l := &Limiter{prefix: prefix, client: node}
		for _, k := range []string{a, b} {
			key := l.Key(k)
			tag := clusterTag(key)
			if tag == key && strings.Contains(key, "{") {
				t.Fatalf("Key(%q) = %q: its hash tag is empty", k, key)
			}
			if more := clusterTag(key + ":2"); more != tag {
				t.Fatalf("Key(%q) = %q: its limits' tag %q differs from %q", k, key, more, tag)
			}
		}
		if a != b && l.Key(a) == l.Key(b) {
			t.Fatalf("keys %q and %q share the Redis key %q", a, b, l.Key(a))
		}
	})
}
