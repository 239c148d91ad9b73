package redissync

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"
)

// TestMain checks that no goroutine outlives the tests, but go-redis's own:
// after a failed dial its pool probes the address once a second until the
// client is closed, and a probe asleep at the close ends when it wakes.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction("github.com/redis/go-redis/v9/internal/pool.(*ConnPool).tryDial"))
}

// A backend is a Redis server for the tests: miniredis always, and a real
// redis-server when one is on the PATH (or REDIS_ADDR names one).
type backend struct {
	name   string
	addr   string
	prefix string // unique per test, for a shared server
	mini   *miniredis.Miniredis
	proc   *redisProcess // set for a redis-server the test started
}

// client returns a new client of b, closed when the test ends.
func (b backend) client(t testing.TB) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: b.addr, DialTimeout: time.Second,
		ReadTimeout: time.Second, WriteTimeout: time.Second, MaxRetries: -1})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// roomyLease and roomyTimeout are the Lease and Timeout of a test that needs
// Redis to answer, not to fail, and does not wait for a lease to end. On a
// loaded 2-core machine (race-detector suites and fuzzing beside the tests)
// a round trip, or the timer of a renewal, can be held up for seconds: with
// a Lease of a second and its default Timeout (250 ms), that failed calls
// with ErrUnavailable and lost leases, in tests that check neither. The
// Timeout stays below a third of the Lease, as Config requires.
const (
	roomyLease   = 30 * time.Second
	roomyTimeout = 5 * time.Second
)

// roomyClient returns a client of b, closed when the test ends, whose own
// timeouts are no tighter than roomyTimeout: the client of the tests whose
// Config has a roomyTimeout. Tests of faults (a Redis stopped, a connection
// killed) keep client and strictClient, which fail within a second.
func (b backend) roomyClient(t testing.TB) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: b.addr, DialTimeout: 2 * roomyTimeout,
		ReadTimeout: 2 * roomyTimeout, WriteTimeout: 2 * roomyTimeout, MaxRetries: -1})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// strictClient returns a client of b, closed when the test ends, whose
// calls fail within a second and are never retried, honouring deadlines or
// not as ctxTimeouts says: the client of the tests of client hooks.
func (b backend) strictClient(t testing.TB, ctxTimeouts bool) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: b.addr, DialTimeout: time.Second, ReadTimeout: time.Second,
		WriteTimeout: time.Second, MaxRetries: -1, ContextTimeoutEnabled: ctxTimeouts})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// roomyHookClient returns a client of b, closed when the test ends, as
// strictClient's but for its read, write and dial timeouts, of roomyTimeout:
// the client of the tests of client hooks that need Redis to answer every
// script they do not hold. strictClient's second failed, on a loaded
// machine, round trips that those tests wait for.
func (b backend) roomyHookClient(t testing.TB, ctxTimeouts bool) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: b.addr, DialTimeout: roomyTimeout, ReadTimeout: roomyTimeout,
		WriteTimeout: roomyTimeout, MaxRetries: -1, ContextTimeoutEnabled: ctxTimeouts})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// awaitKeyedIdle waits until k holds no key, has no round trip under way and
// no script queued, and fails t if that has not come within 10 s: take-backs
// may still be on their way when a test's calls have returned, but a place
// in the pipe, or a key, kept past them is kept for good.
func awaitKeyedIdle(t testing.TB, k *Keyed, what string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		k.pipe.mu.Lock()
		u, q := k.pipe.underway, len(k.pipe.queue)
		k.pipe.mu.Unlock()
		l := k.Len()
		if u == 0 && q == 0 && l == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d round trips under way, %d scripts queued, %d keys held", what, u, q, l)
		}
	}
}

// config returns a Config for a Semaphore of n permits named name on c.
func (b backend) config(c redis.UniversalClient, name string, n int, lease time.Duration) Config {
	return Config{Client: c, Name: name, N: n, Lease: lease, Prefix: b.prefix, Poll: 200 * time.Millisecond}
}

// roomyConfig returns a Config for a Semaphore of n permits named name, on a
// roomyClient of its own (as a process of its own would have), with a
// roomyLease and roomyTimeout: for a test that needs Redis to answer and
// waits for no lease to end.
func (b backend) roomyConfig(t testing.TB, name string, n int) Config {
	cfg := b.config(b.roomyClient(t), name, n, roomyLease)
	cfg.Timeout = roomyTimeout
	return cfg
}

var prefixes atomic.Int64

// backends returns the Redis servers to run a test against.
func backends(t *testing.T) []backend {
	m := miniredis.RunT(t)
	m.ClockTTL(true) // keys expire with time, as in Redis: a lock's lease ends
	out := []backend{{name: "miniredis", addr: m.Addr(), mini: m, prefix: "test:"}}
	if addr := realRedis(t); addr != "" {
		out = append(out, backend{name: "redis-server", addr: addr, prefix: fmt.Sprintf("test%d:", prefixes.Add(1))})
	}
	return out
}

// realRedis returns the address of a real Redis server, or "": REDIS_ADDR,
// or a redis-server started for the test.
func realRedis(t testing.TB) string {
	if addr := os.Getenv("REDIS_ADDR"); addr != "" {
		return addr
	}
	if _, err := exec.LookPath("redis-server"); err != nil {
		return ""
	}
	return startRedis(t, freePort(t)).addr
}

// ownRedis starts a redis-server for the test alone (which it may stop), or
// skips the test.
func ownRedis(t *testing.T) backend {
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("no redis-server on the PATH")
	}
	p := startRedis(t, freePort(t))
	return backend{name: "redis-server", addr: p.addr, prefix: "own:", proc: p}
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
	cmd  *exec.Cmd
}

// startRedis starts redis-server on port, without persistence, and kills it
// when the test ends.
func startRedis(t testing.TB, port int) *redisProcess {
	t.Helper()
	cmd := exec.Command("redis-server", "--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--protected-mode", "no")
	if err := cmd.Start(); err != nil {
		t.Fatalf("start redis-server: %v", err)
	}
	p := &redisProcess{addr: "127.0.0.1:" + strconv.Itoa(port), cmd: cmd}
	t.Cleanup(p.kill)
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

// pause stops the server (SIGSTOP) as a hung machine would, and resume
// restarts it.
func (p *redisProcess) pause()  { _ = p.cmd.Process.Signal(syscall.SIGSTOP) }
func (p *redisProcess) resume() { _ = p.cmd.Process.Signal(syscall.SIGCONT) }

func (p *redisProcess) kill() {
	if p.cmd.Process != nil && p.cmd.ProcessState == nil {
		p.resume()
		_ = p.cmd.Process.Kill()
		_ = p.cmd.Wait()
	}
}

// goAcquire runs an Acquire of s, bounded by d, in a goroutine of its own;
// its outcome comes on the channel returned.
func goAcquire(s *Semaphore, d time.Duration) <-chan acquired {
	got := make(chan acquired, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), d)
		defer cancel()
		p, err := s.Acquire(ctx)
		got <- acquired{p, err}
	}()
	return got
}

// landThenServed waits until a script has been answered since the late
// bytes were dropped (after counts them: the waiter's new attempt, which
// reached Redis first), lands them, and fails t unless the waiter's Acquire
// (got) then returns the permit they handed it, which it gives back. what
// names the late script.
func landThenServed(t *testing.T, after *atomic.Int32, got <-chan acquired, land func(), what string) {
	t.Helper()
	for after.Load() == 0 {
		select {
		case a := <-got:
			t.Fatalf("the waiter's Acquire = %v before the %s landed", a.err, what)
		default:
		}
		time.Sleep(time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond)
	land()
	a := <-got
	if a.err != nil {
		t.Fatalf("the waiter's Acquire = %v after the late %s handed it a permit; want it woken to ask again", a.err, what)
	}
	if err := a.p.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
}
