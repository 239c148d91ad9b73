package bench

import (
	"context"
	"net"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"

	"github.com/ctxsync/ctxsync/ratelimit/redislimit"
)

// benchRedis returns the address of a real Redis server: REDIS_ADDR, or a
// redis-server started once for the run. It skips the benchmark if there is
// neither.
func benchRedis(b *testing.B) string {
	if addr := os.Getenv("REDIS_ADDR"); addr != "" {
		return addr
	}
	redisOnce.Do(startBenchRedis)
	if redisAddr == "" {
		b.Skip("no redis-server on the PATH and no REDIS_ADDR")
	}
	return redisAddr
}

var (
	redisOnce sync.Once
	redisAddr string
	redisCmd  *exec.Cmd
)

func startBenchRedis() {
	if _, err := exec.LookPath("redis-server"); err != nil {
		return
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	cmd := exec.Command("redis-server", "--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no")
	if cmd.Start() != nil {
		return
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer c.Close()
	for range 500 {
		if c.Ping(context.Background()).Err() == nil {
			redisCmd, redisAddr = cmd, addr
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
}

func TestMain(m *testing.M) {
	code := m.Run()
	if redisCmd != nil {
		_ = redisCmd.Process.Kill()
		_ = redisCmd.Wait()
	}
	os.Exit(code)
}

// redisDecider makes one rate-limit decision through Redis.
type redisDecider struct {
	name string
	new  func(b *testing.B, c *redis.Client) func(ctx context.Context, key string)
}

var redisDeciders = []redisDecider{
	{"ctxsync", ctxsyncDecider(0)},
	// Each call in a round trip of its own, as without pipelining.
	{"ctxsync-unpipelined", ctxsyncDecider(-1)},
	{"redis_rate", func(b *testing.B, c *redis.Client) func(context.Context, string) {
		l := redis_rate.NewLimiter(c)
		limit := redis_rate.Limit{Rate: 1e6, Burst: 1e6, Period: time.Second}
		return func(ctx context.Context, key string) {
			if _, err := l.Allow(ctx, key, limit); err != nil {
				panic(err)
			}
		}
	}},
}

func ctxsyncDecider(maxRoundTrips int) func(*testing.B, *redis.Client) func(context.Context, string) {
	return func(b *testing.B, c *redis.Client) func(context.Context, string) {
		l, err := redislimit.New(redislimit.Config{Client: c, Rate: 1e6, Burst: 1e6, Timeout: time.Second,
			MaxRoundTrips: maxRoundTrips})
		if err != nil {
			b.Fatal(err)
		}
		return func(ctx context.Context, key string) {
			if _, err := l.TakeContext(ctx, key, 1); err != nil {
				panic(err)
			}
		}
	}
}

// warmUp opens the client's connections before the timer starts, by making
// decisions from g goroutines at once: the benchmark measures decisions, not
// dials, and the side that runs first does not pay for the server's start.
func warmUp(c *redis.Client, g int, allow func(context.Context, string)) {
	var wg sync.WaitGroup
	for range g {
		wg.Go(func() {
			for range 20 {
				allow(context.Background(), "warm-up")
			}
		})
	}
	wg.Wait()
	if n := c.PoolStats().TotalConns; n == 0 {
		panic("bench: warm-up opened no connection")
	}
}

// BenchmarkRedisAllow: one decision through a real Redis server on loopback,
// serially (latency) and from 32 goroutines (throughput).
func BenchmarkRedisAllow(b *testing.B) {
	for _, d := range redisDeciders {
		b.Run("goroutines=1/impl="+d.name, func(b *testing.B) {
			c := redis.NewClient(&redis.Options{Addr: benchRedis(b), ContextTimeoutEnabled: true})
			defer c.Close()
			allow := d.new(b, c)
			ctx := context.Background()
			allow(ctx, "warm-up")
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				allow(ctx, "bench-key")
			}
		})
		b.Run("goroutines=32/impl="+d.name, func(b *testing.B) {
			c := redis.NewClient(&redis.Options{Addr: benchRedis(b), ContextTimeoutEnabled: true, PoolSize: 32})
			defer c.Close()
			allow := d.new(b, c)
			warmUp(c, 32, allow)
			inGoroutines(b, 32, func(ctx context.Context) { allow(ctx, "bench-key") })
		})
	}
}
