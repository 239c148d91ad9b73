package redissync

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// loseReplies is a client hook that, while armed, lets a release script run
// on the server and then fails its call as a dropped connection would: the
// script's work is done, its reply lost.
type loseReplies struct{ armed atomic.Bool }

func (h *loseReplies) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *loseReplies) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
func (h *loseReplies) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		args := cmd.Args()
		src, _ := args[min(1, len(args)-1)].(string)
		if err == nil && len(args) > 1 && h.armed.Load() &&
			(src == setRelease.Hash() || src == lockRelease.Hash() || strings.Contains(src, "local id = ARGV[2]")) {
			h.armed.Store(false)
			err = &net.OpError{Op: "read", Net: "tcp", Err: errors.New("reply lost")}
			cmd.SetErr(err)
		}
		return err
	}
}

// TestReleaseReplyLostWakesLocalWaiter: a Release that hands the permit to a
// waiter of its own Semaphore tells it by its reply; when that reply is lost
// (the connection dropped, the Timeout or ctx ended after the script ran),
// the waiter must still be woken to ask again at once, not left asleep until
// its next poll, by which time the permit held for it may have lapsed and
// its place in line gone.
func TestReleaseReplyLostWakesLocalWaiter(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			c := b.client(t)
			cfg := b.config(c, "lostreply", 1, time.Hour)
			cfg.Poll = time.Hour // the waiter polls at the lease's end, an hour away
			s := mustNew(t, cfg)
			again := countAgain(c, s) // around h: see waitAskedAgain
			h := &loseReplies{}
			c.AddHook(h)
			p, err := s.Acquire(ctx)
			if err != nil {
				t.Fatal(err)
			}
			got := make(chan *Permit, 1)
			go func() {
				q, err := s.Acquire(ctx)
				if err != nil {
					t.Error(err)
				}
				got <- q
			}()
			waitQueued(t, s, 1)
			waitAskedAgain(t, again)
			h.armed.Store(true)
			if err := p.Release(ctx); !errors.Is(err, ErrUnavailable) {
				t.Fatalf("Release with its reply lost: %v; want ErrUnavailable", err)
			}
			select {
			case q := <-got:
				if q == nil {
					t.Fatal("no permit")
				}
				if q.Token() <= p.Token() {
					t.Errorf("token %d after %d", q.Token(), p.Token())
				}
				if err := q.Release(ctx); err != nil {
					t.Fatal(err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the local waiter handed the permit was not woken when the Release's reply was lost")
			}
		})
	}
}
