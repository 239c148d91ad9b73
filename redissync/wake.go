package redissync

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Waiters are woken by pub/sub: a script that frees a permit hands it to the
// waiter at the head of the line and publishes its id and token on the
// channel of the waiter's Semaphore alone (named by the tag in the id), and a
// Semaphore with waiters keeps one subscription to its channel, which passes
// each waiter its own. So a hand-over wakes one process, not every process
// waiting on the Name. The subscription lasts while the Semaphore has
// waiters.

// subscribe starts the subscription if there is none.
func (s *Semaphore) subscribe() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopSub != nil || len(s.waiters) == 0 {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	ps := s.client.Subscribe(ctx) // no channel yet: no round trip here
	go s.listen(ctx, ps)
	s.stopSub = func() {
		cancel()
		// In the background: Close waits for a subscription being made
		// (its lock held through the handshake), which a stalled Redis
		// draws out to the client's ReadTimeout; the waiter leaving
		// must not wait for it.
		go func() { _ = ps.Close() }()
	}
}

// leave forgets a waiter, and ends the subscription with the last one.
func (s *Semaphore) leave(id string) {
	s.mu.Lock()
	delete(s.waiters, id)
	var stop func()
	if len(s.waiters) == 0 && s.stopSub != nil {
		stop, s.stopSub = s.stopSub, nil
	}
	s.mu.Unlock()
	if stop != nil {
		stop()
	}
}

// listen subscribes, then wakes the waiters named by each message, and every
// waiter each time the subscription is made (messages may have been missed
// before). After a failure it waits a little longer each time, up to a Poll,
// so as not to hammer a Redis that is coming back; the waiters poll
// meanwhile.
func (s *Semaphore) listen(ctx context.Context, ps *redis.PubSub) {
	const first = 10 * time.Millisecond
	pause := first
	subscribed := false
	for ctx.Err() == nil {
		var err error
		if !subscribed {
			if err = ps.Subscribe(ctx, s.channel); err == nil {
				subscribed = true
			}
		}
		if err == nil {
			var msg any
			if msg, err = ps.Receive(ctx); err == nil {
				pause = first
				s.dispatch(msg)
				continue
			}
			// The next Receive connects and subscribes again.
		}
		if !sleep(ctx, pause) {
			return
		}
		pause = min(2*pause, s.poll)
	}
}

// A grant is what a waiter is woken with: a permit handed to it, or
// nothing (token 0), to try again.
type grant struct {
	token int64
	now   int64 // the server's clock at the grant, ms
	lease time.Duration
}

// dispatch wakes the waiters a pub/sub event concerns: at a subscription,
// all, to try again (a message may have been missed); at a message, those
// it hands a permit to ("now lease id:token ...").
func (s *Semaphore) dispatch(msg any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch m := msg.(type) {
	case *redis.Subscription:
		for _, w := range s.waiters {
			signal(w, grant{})
		}
	case *redis.Message:
		f := strings.Fields(m.Payload)
		if len(f) < 2 {
			return
		}
		now, err1 := strconv.ParseInt(f[0], 10, 64)
		lease, err2 := strconv.ParseInt(f[1], 10, 64)
		if err1 != nil || err2 != nil || lease < 0 || lease > int64(maxLease/time.Millisecond) {
			return
		}
		for _, e := range f[2:] {
			id, tok, ok := strings.Cut(e, ":")
			w, mine := s.waiters[id]
			if !ok || !mine {
				continue
			}
			token, err := strconv.ParseInt(tok, 10, 64)
			if err != nil || token < 1 {
				signal(w, grant{})
				continue
			}
			signal(w, grant{token: token, now: now, lease: time.Duration(lease) * time.Millisecond})
		}
	}
}

// signal passes g to a waiter without blocking; a grant replaces a plain
// wake-up waiting in the buffer. Only dispatch sends, under s.mu.
func signal(w chan grant, g grant) {
	select {
	case w <- g:
		return
	default:
	}
	if g.token == 0 {
		return
	}
	select {
	case <-w:
	default:
	}
	select {
	case w <- g:
	default:
	}
}

// sleep waits d, or until ctx ends; it reports whether ctx is still live.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
