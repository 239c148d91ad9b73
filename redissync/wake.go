package redissync

import (
	"context"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Waiters are woken by pub/sub: a script that frees a permit publishes the
// ids of the waiters that may now take one, and a Semaphore with waiters
// keeps one subscription, which wakes its own. The subscription lasts while
// the Semaphore has waiters.

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
		_ = ps.Close()
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

// dispatch wakes the waiters a pub/sub event concerns.
func (s *Semaphore) dispatch(msg any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch m := msg.(type) {
	case *redis.Subscription:
		for _, w := range s.waiters {
			signal(w)
		}
	case *redis.Message:
		for _, id := range strings.Fields(m.Payload) {
			if w, ok := s.waiters[id]; ok {
				signal(w)
			}
		}
	}
}

func signal(w chan struct{}) {
	select {
	case w <- struct{}{}:
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
