package redissync

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// gateHook holds back the next script (a command or a pipeline of them)
// once armed, as a slow network would, until the test opens its gate: then
// it reaches Redis, even if its caller has stopped waiting. With
// ctxTimeouts it answers its caller at the caller's deadline, as a client
// that honours deadlines does, and its bytes land later, on their own.
// Other commands (the pub/sub connection's) go through.
type gateHook struct {
	ctxTimeouts bool

	mu   sync.Mutex
	gate chan struct{} // the armed gate, for the next script; nil: none

	held    chan struct{} // told when a script is held
	scripts atomic.Int32  // scripts (or pipelines) answered, but the held
}

func newGateHook(ctxTimeouts bool) *gateHook {
	return &gateHook{ctxTimeouts: ctxTimeouts, held: make(chan struct{}, 1)}
}

// arm makes the gate of the next script, which the returned func opens.
func (h *gateHook) arm() (open func()) {
	g := make(chan struct{})
	h.mu.Lock()
	h.gate = g
	h.mu.Unlock()
	return sync.OnceFunc(func() { close(g) })
}

func (h *gateHook) take() chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	g := h.gate
	h.gate = nil
	return g
}

func isScript(cmd redis.Cmder) bool {
	name := strings.ToLower(cmd.Name())
	return name == "evalsha" || name == "eval"
}

func (h *gateHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *gateHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if !isScript(cmd) {
			return next(ctx, cmd)
		}
		g := h.take()
		if g == nil {
			err := next(ctx, cmd)
			h.scripts.Add(1)
			return err
		}
		h.held <- struct{}{}
		if h.ctxTimeouts {
			// The caller's command is answered now; a copy of it lands.
			late := redis.NewCmd(context.Background(), cmd.Args()...)
			go func() {
				<-g
				_ = next(context.Background(), late)
			}()
			<-ctx.Done()
			cmd.SetErr(ctx.Err())
			return ctx.Err()
		}
		<-g
		return next(context.WithoutCancel(ctx), cmd)
	}
}

func (h *gateHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if len(cmds) == 0 || !isScript(cmds[0]) {
			return next(ctx, cmds) // a connection's set-up
		}
		g := h.take()
		if g == nil {
			err := next(ctx, cmds)
			h.scripts.Add(1)
			return err
		}
		h.held <- struct{}{}
		<-g
		return next(context.WithoutCancel(ctx), cmds)
	}
}

// awaitScripts waits until h has answered n scripts, and fails t if that
// has not come within 10 s.
func (h *gateHook) awaitScripts(t *testing.T, n int32) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); h.scripts.Load() < n; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d scripts answered within 10 s; want %d", h.scripts.Load(), n)
		}
	}
}

// Regression: a Release whose ctx ended while its script was on its way
// woke the Semaphore's waiters at once, to ask again, and dropped the
// script's reply when it came. A waiter whose new attempt reached Redis
// before the script found nothing and went back to sleep until its Poll
// (here an hour; its lease-end wake-up a minute away), while the script
// then handed it a permit that only the dropped reply named: the permit
// was held for nobody, its lease running. The reply must reach the waiter
// it names when it comes; a reply that never comes (a client that honours
// deadlines dropped the round trip, whose bytes may yet land) must wake
// the waiters once more, when those bytes no longer can.
func TestReleaseLateReplyReachesTheWaiter(t *testing.T) {
	for _, b := range backends(t) {
		for _, tc := range []struct {
			name        string
			ctxTimeouts bool
			pipelined   bool // the release goes in a pipeline, behind another round trip
		}{
			{"own", false, false},
			{"own/ctxTimeouts", true, false},
			{"pipelined", false, true},
		} {
			t.Run(b.name+"/"+tc.name, func(t *testing.T) {
				c := b.strictClient(t, tc.ctxTimeouts)
				h := newGateHook(tc.ctxTimeouts)
				c.AddHook(h)
				// Two permits, so that Release runs the full script,
				// which hands a permit over (a lock's first try, the
				// give script, never does).
				cfg := b.config(c, "releaselate-"+tc.name, 2, time.Minute)
				cfg.Poll = time.Hour
				// A round trip keeps its place in the pipe for 2 s (the
				// hold, without ctxTimeouts: the Timeout, more than the
				// client's ReadTimeout); the Release gives up at 1 s, and
				// the waiter's new attempt, queued then, has until 3 s.
				cfg.Timeout = 2 * time.Second
				s, err := New(cfg)
				if err != nil {
					t.Fatal(err)
				}
				warm(t, s) // Redis knows the scripts: no NOSCRIPT round trip
				ctx := context.Background()
				p1, err := s.Acquire(ctx)
				if err != nil {
					t.Fatal(err)
				}
				p2, err := s.Acquire(ctx)
				if err != nil {
					t.Fatal(err)
				}
				// The waiter: told at once, it returns; else at a lease's
				// end (a minute).
				before := h.scripts.Load()
				got := goAcquire(s, 10*time.Second)
				// Its attempt puts it in line; its subscription, once
				// made, wakes it to ask once more. Then it sleeps.
				h.awaitScripts(t, before+2)

				rctx, cancel := context.WithTimeout(ctx, time.Second)
				defer cancel()
				asked := h.scripts.Load()
				open := h.arm()
				defer open()
				released := make(chan error, 1)
				if tc.pipelined {
					// A TryAcquire's round trip is held; the Release
					// queues behind it and goes, when it ends, in a
					// pipeline that is held in turn.
					tried := make(chan error, 1)
					go func() {
						_, err := s.TryAcquire(ctx)
						tried <- err
					}()
					<-h.held
					go func() { released <- p1.Release(rctx) }()
					for {
						s.pipe.mu.Lock()
						n := len(s.pipe.queue)
						s.pipe.mu.Unlock()
						if n == 1 {
							break
						}
						time.Sleep(time.Millisecond)
					}
					open2 := h.arm()
					defer open2()
					open()
					if err := <-tried; !errors.Is(err, ErrWouldWait) {
						t.Fatalf("TryAcquire = %v; want ErrWouldWait", err)
					}
					<-h.held
					open = open2
				} else {
					go func() { released <- p1.Release(rctx) }()
					<-h.held
				}
				if err := <-released; !errors.Is(err, context.DeadlineExceeded) {
					t.Fatalf("Release = %v; want its ctx's end", err)
				}
				// Woken by the failed Release, the waiter asks again,
				// and its attempt is answered (at the hold's end,
				// without ctxTimeouts) before the script runs.
				for h.scripts.Load() == asked {
					select {
					case a := <-got:
						// Its attempt waited past its Timeout in
						// the pipe: the machine was too slow for
						// the 1 s between the hold's end and it.
						t.Skipf("the waiter's Acquire = %v before the release ran: the case was not reached", a.err)
					default:
					}
					time.Sleep(time.Millisecond)
				}
				open()
				a := <-got
				if a.err != nil {
					t.Fatalf("the waiter's Acquire = %v after the release script handed it a permit; want it told", a.err)
				}
				if err := a.p.Release(ctx); err != nil {
					t.Fatal(err)
				}
				if err := p2.Release(ctx); err != nil {
					t.Fatal(err)
				}
			})
		}
	}
}
