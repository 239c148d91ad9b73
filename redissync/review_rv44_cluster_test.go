package redissync

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// startClusterNode starts a redis-server in cluster mode holding every slot
// (a cluster of one node), and kills it when the test ends; it skips the
// test if there is no redis-server.
func startClusterNode(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("no redis-server on the PATH")
	}
	port := freePort(t)
	dir := t.TempDir()
	cmd := exec.Command("redis-server", "--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--protected-mode", "no", "--dir", dir,
		"--cluster-enabled", "yes", "--cluster-config-file", dir+"/nodes.conf")
	if err := cmd.Start(); err != nil {
		t.Fatalf("start redis-server: %v", err)
	}
	p := &redisProcess{addr: "127.0.0.1:" + strconv.Itoa(port), cmd: cmd}
	t.Cleanup(p.kill)
	c := redis.NewClient(&redis.Options{Addr: p.addr, MaxRetries: -1})
	defer c.Close()
	ctx := context.Background()
	deadline := time.Now().Add(time.Minute) // a loaded machine may take seconds
	for c.Ping(ctx).Err() != nil {
		if time.Now().After(deadline) {
			t.Fatal("redis-server did not come up")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := c.Do(ctx, "cluster", "addslotsrange", 0, 16383).Err(); err != nil {
		t.Fatalf("CLUSTER ADDSLOTSRANGE: %v", err)
	}
	for {
		info, err := c.ClusterInfo(ctx).Result()
		if err == nil && strings.Contains(info, "cluster_state:ok") {
			return p.addr
		}
		if time.Now().After(deadline) {
			t.Fatalf("the cluster is not ok: %q, %v", info, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestKeyedOnCluster: a Keyed lock and a Keyed of two permits per key over
// a *redis.ClusterClient (a cluster of one node, which checks that every
// script's keys share a slot: CROSSSLOT otherwise), with keys that hold
// braces, colons and bytes that are not UTF-8, and plain Semaphores on the
// same client. Two clients' waiters contend across the keys while the
// subscriptions are killed at random: each is served (a Poll of an hour:
// by a message, a reply or a resubscription), never more than N hold, and
// nothing is kept afterwards.
func TestKeyedOnCluster(t *testing.T) {
	addr := startClusterNode(t)
	ctx := context.Background()
	newClient := func() *redis.ClusterClient {
		c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{addr}, DialTimeout: 2 * time.Second,
			ReadTimeout: 10 * time.Second, WriteTimeout: 10 * time.Second, MaxRetries: -1})
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	admin := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	t.Cleanup(func() { _ = admin.Close() })
	keys := []string{"", "{", "}", "}{", ":", "a:b", "x}y{z", "{k}", "\xff\xfe\x00", strings.Repeat("{long}", 200)}
	cfg := func(c redis.UniversalClient, name string, n int) Config {
		return Config{Client: c, Name: name, N: n, Lease: time.Minute, Timeout: 5 * time.Second, Poll: time.Hour}
	}
	type target struct {
		n       int
		acquire []func(context.Context) (*Permit, error)
		inside  atomic.Int32
	}
	var targets []*target
	var keyeds []*Keyed
	clients := []*redis.ClusterClient{newClient(), newClient()}
	for _, n := range []int{1, 2} {
		var ks []*Keyed
		for _, c := range clients {
			k, err := NewKeyed(cfg(c, fmt.Sprintf("ck%d", n), n))
			if err != nil {
				t.Fatal(err)
			}
			ks = append(ks, k)
		}
		keyeds = append(keyeds, ks...)
		for _, key := range keys {
			tg := &target{n: n}
			for _, k := range ks {
				tg.acquire = append(tg.acquire, func(ctx context.Context) (*Permit, error) { return k.Acquire(ctx, key) })
			}
			targets = append(targets, tg)
		}
	}
	var sems []*Semaphore
	for j, n := range []int{1, 2} {
		tg := &target{n: n}
		for _, c := range clients {
			s := mustNew(t, cfg(c, fmt.Sprintf("cs%d", j), n))
			sems = append(sems, s)
			tg.acquire = append(tg.acquire, s.Acquire)
		}
		targets = append(targets, tg)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var served atomic.Int64
	for range 60 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				tg := targets[rand.N(len(targets))]
				d, patient := 20*time.Second, true
				if rand.N(3) == 0 {
					d, patient = time.Duration(rand.N(30_000))*time.Microsecond, false
				}
				actx, cancel := context.WithTimeout(ctx, d)
				p, err := tg.acquire[rand.N(len(tg.acquire))](actx)
				cancel()
				if err != nil {
					if patient || !errors.Is(err, context.DeadlineExceeded) {
						t.Errorf("Acquire (ctx of %v): %v", d, err)
					}
					continue
				}
				served.Add(1)
				if tg.inside.Add(1) > int32(tg.n) {
					t.Errorf("more than %d holders", tg.n)
				}
				time.Sleep(time.Duration(rand.N(500)) * time.Microsecond)
				tg.inside.Add(-1)
				if err := p.Release(ctx); err != nil {
					t.Errorf("Release: %v", err)
				}
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			case <-time.After(time.Duration(20+rand.N(80)) * time.Millisecond):
			}
			if err := admin.Do(ctx, "client", "kill", "type", "pubsub").Err(); err != nil {
				t.Error(err)
			}
		}
	}()
	time.Sleep(time.Second)
	close(stop)
	wg.Wait()
	t.Logf("%d served", served.Load())
	for _, k := range keyeds {
		awaitKeyedIdle(t, k, "after the run")
		for _, key := range keys {
			if held, queued := counts(t, k.newSemaphore(k.name, key)); held != 0 || queued != 0 {
				t.Errorf("key %q after the run: %d held, %d queued", key, held, queued)
			}
		}
	}
	for _, s := range sems {
		if held, queued := counts(t, s); held != 0 || queued != 0 {
			t.Errorf("%s after the run: %d held, %d queued", s.keys[0], held, queued)
		}
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		hubsMu.Lock()
		open := hubs[clients[0]] != nil || hubs[clients[1]] != nil
		hubsMu.Unlock()
		chans, err := admin.PubSubChannels(ctx, "*").Result()
		if err != nil {
			t.Fatal(err)
		}
		if !open && len(chans) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("10 s after the run: subscription open %v, channels %q", open, chans)
		}
	}
}
