package redislimit

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// underCommand marks the ctx that a command of the Limiter's passes on to
// the client: what the client runs with it runs inside that command.
type underCommand struct{}

// roundTripHook is a client hook that counts the Limiter's own commands
// under way (the script's, alone or in pipelines, and Reset's DEL), and
// apart from them the client's other commands and pipelines: the handshake
// of a new connection (HELLO, then CLIENT SETINFO in a pipeline), which
// go-redis passes through the client's hooks.
type roundTripHook struct {
	ours        inFlight     // the Limiter's commands
	all         inFlight     // every command and pipeline but HELLO's, as a hook that counts them all would
	others      atomic.Int64 // the client's own commands and pipelines
	othersInOur atomic.Int64 // those of them made inside one of the Limiter's commands
}

func ours(name string) bool { return strings.HasPrefix(name, "eval") || name == "del" }

func (h *roundTripHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *roundTripHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		return h.around(ctx, cmd.Name(), func(ctx context.Context) error { return next(ctx, cmd) })
	}
}

func (h *roundTripHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		return h.around(ctx, cmds[0].Name(), func(ctx context.Context) error { return next(ctx, cmds) })
	}
}

func (h *roundTripHook) around(ctx context.Context, name string, next func(context.Context) error) error {
	if ours(name) {
		h.ours.start()
		defer h.ours.now.Add(-1)
		ctx = context.WithValue(ctx, underCommand{}, true)
	} else {
		h.others.Add(1)
		if ctx.Value(underCommand{}) != nil {
			h.othersInOur.Add(1)
		}
	}
	if name != "hello" {
		h.all.start()
		defer h.all.now.Add(-1)
	}
	return next(ctx)
}

// TestMaxRoundTripsAsAHookCountsThem: a hook that counted EVALSHA calls and
// pipelines under way saw, under a healthy load, 2 at once with a
// MaxRoundTrips of 1 (6 to 8 with 4). The Limiter's own commands never pass
// MaxRoundTrips; what the hook saw besides is the handshake of each new
// connection (CLIENT SETINFO, in a pipeline of the client's), which go-redis
// sends through the client's hooks inside the command that needed the
// connection, before that command, on the same connection. A fresh client
// dials for its first command, so the handshake is always seen, and always
// inside one of the Limiter's commands.
func TestMaxRoundTripsAsAHookCountsThem(t *testing.T) {
	addr := requireRealRedis(t)
	for _, fast := range []bool{false, true} {
		for _, max := range []int{1, 4} {
			t.Run(fmt.Sprintf("ContextTimeoutEnabled=%v/MaxRoundTrips=%d", fast, max), func(t *testing.T) {
				c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, ContextTimeoutEnabled: fast})
				t.Cleanup(func() { _ = c.Close() })
				h := new(roundTripHook)
				c.AddHook(h)
				l := newLimiter(t, Config{Client: c, Rate: 1e6, Burst: 1000, MaxRoundTrips: max,
					Prefix: fmt.Sprintf("test%d:", prefixes.Add(1))})
				var wg sync.WaitGroup
				for g := range 16 {
					wg.Go(func() {
						for i := range 100 {
							ctx, cancel := context.Background(), context.CancelFunc(func() {})
							if (g+i)%2 == 0 { // a ctx that can be cancelled: the round trip runs in a goroutine
								ctx, cancel = context.WithCancel(ctx)
							}
							if i%10 == 0 {
								_ = l.Reset(ctx, "k")
							} else {
								_, _ = l.TakeContext(ctx, "k", 1)
							}
							cancel()
						}
					})
				}
				wg.Wait()
				require.Zero(t, l.Failures())
				require.LessOrEqual(t, h.ours.most.Load(), int64(max), "the Limiter's commands under way at once")
				require.Positive(t, h.others.Load(), "no handshake seen: a fresh client dials for its first command")
				require.Equal(t, h.others.Load(), h.othersInOur.Load(), "the client's own commands not all inside one of the Limiter's")
				if max == 1 {
					// The first command's handshake, counted by a hook that
					// counts every pipeline: the reported 2.
					require.EqualValues(t, 2, h.all.most.Load())
				}
				t.Logf("the Limiter's at once: %d; a hook counting every pipeline: %d; the client's own commands: %d",
					h.ours.most.Load(), h.all.most.Load(), h.others.Load())
			})
		}
	}
}
