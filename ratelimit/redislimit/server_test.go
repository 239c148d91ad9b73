package redislimit

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"
)

// TestMain checks that no goroutine outlives the tests, but go-redis's: after
// a failed dial, its pool probes the address once a second until it is
// closed, and a probe asleep when the client closes ends only when it wakes.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction("github.com/redis/go-redis/v9/internal/pool.(*ConnPool).tryDial"))
}

// A backend is a Redis server the tests talk to: miniredis, embedded, always;
// a real redis-server when one is on the PATH or REDIS_ADDR names one.
type backend struct {
	name   string
	addr   string
	prefix string // unique per test, for a shared server
	// mini is set for miniredis: the tests control its clock.
	mini *miniredis.Miniredis
}

// client returns a client of b, closed when the test ends.
func (b backend) client(t testing.TB) redis.UniversalClient {
	c := redis.NewClient(&redis.Options{Addr: b.addr, DialTimeout: time.Second, MaxRetries: -1})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

var prefixes atomic.Int64

// backends returns the Redis servers to run a test against.
func backends(t *testing.T) []backend {
	m := miniredis.RunT(t)
	m.SetTime(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	out := []backend{{name: "miniredis", addr: m.Addr(), mini: m, prefix: "test:"}}
	if addr := realRedis(t); addr != "" {
		out = append(out, backend{name: "redis-server", addr: addr, prefix: fmt.Sprintf("test%d:", prefixes.Add(1))})
	}
	return out
}

// realRedis returns the address of a real Redis server, or "" if there is
// none: REDIS_ADDR, or a redis-server started for the test.
func realRedis(t testing.TB) string {
	if addr := os.Getenv("REDIS_ADDR"); addr != "" {
		return addr
	}
	if _, err := exec.LookPath("redis-server"); err != nil {
		return ""
	}
	s := startRedis(t, freePort(t))
	return s.addr
}

// requireRealRedis skips the test unless a real Redis can be had.
func requireRealRedis(t *testing.T) string {
	addr := realRedis(t)
	if addr == "" {
		t.Skip("no redis-server on the PATH and no REDIS_ADDR")
	}
	return addr
}

func freePort(t testing.TB) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	return port
}

// redisProcess is a redis-server started by a test.
type redisProcess struct {
	addr string
	port int
	cmd  *exec.Cmd
}

// startRedis starts redis-server on port, without persistence, and stops it
// when the test ends.
func startRedis(t testing.TB, port int) *redisProcess {
	t.Helper()
	cmd := exec.Command("redis-server", "--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--protected-mode", "no")
	if err := cmd.Start(); err != nil {
		t.Fatalf("start redis-server: %v", err)
	}
	p := &redisProcess{addr: "127.0.0.1:" + strconv.Itoa(port), port: port, cmd: cmd}
	t.Cleanup(p.stop)
	c := redis.NewClient(&redis.Options{Addr: p.addr, MaxRetries: -1})
	defer c.Close()
	deadline := time.Now().Add(time.Minute) // a loaded machine may take seconds to start it
	for c.Ping(context.Background()).Err() != nil {
		if time.Now().After(deadline) {
			t.Fatal("redis-server did not come up")
		}
		time.Sleep(10 * time.Millisecond)
	}
	return p
}

func (p *redisProcess) stop() {
	if p.cmd.Process != nil && p.cmd.ProcessState == nil {
		_ = p.cmd.Process.Kill()
		_ = p.cmd.Wait()
	}
}
