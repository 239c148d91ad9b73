package redissync

import (
	"context"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Waiters are woken by pub/sub: a script that frees a permit hands it to the
// waiter at the head of the line and publishes its id and token on the
// channel of the waiter's Semaphore alone (named by the tag in the id). So a
// hand-over wakes one process, not every process waiting on the Name.
//
// Every Semaphore made on one client shares one subscription (a hub): one
// pub/sub connection, subscribed to the channel of each Semaphore that has
// waiters, and unsubscribed from it when its last waiter leaves; the
// connection is closed when no Semaphore of the client has a waiter. A
// connection of its own per Semaphore, as before, put a process locking per
// account past Redis's maxclients; a channel costs the connection a few
// bytes in Redis instead.

// hubs holds the hub of each client that has a Semaphore with waiters, and
// no other: a hub kept past its last waiter would keep its client (and the
// client its pool) for the life of the process. hubsMu also guards every
// hub's channel maps. It is held only to change a map or read one, never
// across a round trip: one lock for all hubs costs nothing next to the
// round trips each join and leave comes with.
var (
	hubsMu sync.Mutex
	hubs   = map[any]*hub{}
)

// A hub is the subscription shared by the Semaphores of one client.
type hub struct {
	key    any
	ps     *redis.PubSub
	ctx    context.Context
	cancel context.CancelFunc
	poll   time.Duration // the longest pause between reconnections

	// guarded by hubsMu
	chans   map[string]*hubChan // the channels wanted
	have    map[string]bool     // the channels asked of Redis
	pending map[string]struct{} // the channels whose want may differ from have
	resend  map[string]struct{} // had, but whose SUBSCRIBE failed: see sync
	syncing bool                // a goroutine of sync runs
	stopped bool
	idle    *time.Timer   // sweeps the channels left (see linger); nil if none is due
	idleAt  time.Time     // when idle is due, on the clock of its maker
	retries uint64        // retry timers made: the last one's alone sends (see sync)
	pause   time.Duration // before the next retry: see sync
}

// A hubChan is a channel wanted: whom its events go to (a Semaphore, or a
// Keyed for every key's), and how many Semaphores with waiters want it.
type hubChan struct {
	to   interface{ dispatch(msg any) }
	refs int
}

// linger is how long a channel stays subscribed after its last waiter left,
// and a hub open after its last channel: a client whose waiters come and
// go (a few goroutines contending for keys) would otherwise open and close
// a connection, or send a SUBSCRIBE, for most waiters, each waking its
// waiters to ask again once confirmed. A channel is swept at the first
// sweep after it was left: up to a linger later (sooner if one was due).
const linger = 250 * time.Millisecond

// hubKey returns what identifies s's client among the hubs: the client,
// when it is a pointer (every go-redis client is); otherwise s itself, which
// then has a hub of its own, as a client value of a type that cannot be a
// map key (or whose copies are not the same client) cannot be shared safely.
func hubKey(s *Semaphore) any {
	if v := reflect.ValueOf(s.client); v.Kind() == reflect.Pointer {
		return s.client
	}
	return s
}

// join subscribes s's channel on the hub of its client, making the hub if
// there is none. It does not wait for Redis: the subscription is made in
// the background, and its confirmation wakes s's waiters to ask again, as a
// message may have gone before it. s.mu is held.
func (s *Semaphore) joinLocked() {
	hubsMu.Lock()
	defer hubsMu.Unlock()
	key := hubKey(s)
	h := hubs[key]
	if h == nil {
		ctx, cancel := context.WithCancel(context.Background())
		h = &hub{key: key, ctx: ctx, cancel: cancel, poll: s.poll,
			ps:    s.client.Subscribe(ctx), // no channel yet: no round trip here
			chans: map[string]*hubChan{}, have: map[string]bool{},
			pending: map[string]struct{}{}, resend: map[string]struct{}{}}
		hubs[key] = h
		go h.listen()
	}
	c := h.chans[s.channel]
	if c == nil {
		var to interface{ dispatch(msg any) } = s
		if s.keyed != nil {
			to = s.keyed
		}
		c = &hubChan{to: to}
		h.chans[s.channel] = c
		h.changedLocked(s.channel)
	}
	c.refs++
	s.hub = h
}

// dropLocked unsubscribes s's channel, and ends the hub with its last
// channel. s.mu is held.
func (s *Semaphore) dropLocked() {
	hubsMu.Lock()
	defer hubsMu.Unlock()
	h := s.hub
	s.hub = nil
	c := h.chans[s.channel]
	if c == nil {
		panic("redissync: bug: a Semaphore left a channel it had not joined")
	}
	// A channel left is unsubscribed, and a hub left with none ended, a
	// linger later: see linger.
	//
	// A sweep due on a timer made in a testing/synctest bubble never comes
	// once the bubble is over: one past its time on the clock of the
	// caller (a bubble's is in the year 2000) is made again.
	if c.refs--; c.refs == 0 && (h.idle == nil || time.Now().After(h.idleAt)) {
		h.idle = time.AfterFunc(linger, h.sweep)
		h.idleAt = time.Now().Add(linger)
	}
}

// sweep unsubscribes the channels that no Semaphore wants, and ends the hub
// if none is left.
func (h *hub) sweep() {
	hubsMu.Lock()
	defer hubsMu.Unlock()
	h.idle = nil
	if h.stopped {
		return
	}
	for ch, c := range h.chans {
		if c.refs == 0 {
			delete(h.chans, ch)
			h.changedLocked(ch)
		}
	}
	if len(h.chans) > 0 {
		return
	}
	delete(hubs, h.key)
	h.stopped = true // a retry due does nothing (see resendDue)
	h.cancel()
	// In the background: Close waits for a subscription being made (its
	// lock held through the handshake), which a stalled Redis draws out to
	// the client's ReadTimeout; sweep runs on a timer, which must not wait.
	go func() { _ = h.ps.Close() }()
}

// changedLocked notes that ch may need a SUBSCRIBE or an UNSUBSCRIBE, and
// starts a goroutine to send it if none runs. Sending it from the waiter's
// goroutine would make the waiter wait for a connection being made, under
// the PubSub's lock, for up to the client's ReadTimeout.
func (h *hub) changedLocked(ch string) {
	h.pending[ch] = struct{}{}
	if !h.syncing {
		h.syncing = true
		go h.sync()
	}
}

// sync sends the SUBSCRIBEs and UNSUBSCRIBEs that the joins and leaves since
// the last call need, in batches, until none is left.
//
// An UNSUBSCRIBE that fails is not sent again: go-redis forgets the
// channels before sending it, and a connection it makes anew subscribes
// only those it remembers. A SUBSCRIBE that fails is sent again (resend),
// on a timer, after a pause that grows as listen's does while they fail,
// and meanwhile the joins and leaves of other channels go on: go-redis
// remembers its channels only once the call is over, and a write that
// failed on a broken connection has made it connect again within the call,
// subscribing the channels it had before, not these. Sent again to a
// connection that has them (a dial that failed, then a Receive that
// connected), a SUBSCRIBE is confirmed once more: the waiters ask Redis
// once more. The channels stay in have meanwhile, as go-redis remembers
// them: one left before it is sent again is unsubscribed.
//
// Each SUBSCRIBE that fails makes a timer, and only the last one made
// sends: a timer made in a testing/synctest bubble never fires once the
// bubble is over, and must not hold back those of the hub's later
// failures. No timer is stopped (a timer of a bubble stopped from outside
// it ends the program): one due after the hub ended does nothing, and
// keeps the hub (not its connection) in memory until then, a Poll at most.
// There is one timer per failed SUBSCRIBE, each a batch of the channels
// joined since the last: no more than the round trips tried.
func (h *hub) sync() {
	for {
		var add, del []string
		hubsMu.Lock()
		for ch := range h.pending {
			want := h.chans[ch] != nil
			_, again := h.resend[ch]
			switch {
			case want && (again || !h.have[ch]):
				add = append(add, ch)
				h.have[ch] = true
			case !want && h.have[ch]:
				del = append(del, ch)
				delete(h.have, ch)
			}
			delete(h.resend, ch)
		}
		clear(h.pending)
		if h.stopped || (len(add) == 0 && len(del) == 0) {
			h.syncing = false
			hubsMu.Unlock()
			return
		}
		hubsMu.Unlock()
		// Never an empty list: Unsubscribe with none leaves every channel.
		if len(del) > 0 {
			_ = h.ps.Unsubscribe(h.ctx, del...)
		}
		if len(add) == 0 {
			continue
		}
		err := h.ps.Subscribe(h.ctx, add...)
		hubsMu.Lock()
		if err == nil {
			h.pause = 0
		} else {
			for _, ch := range add {
				h.resend[ch] = struct{}{}
			}
			if !h.stopped {
				h.pause = backoff(h.pause, h.poll)
				h.retries++
				n := h.retries
				time.AfterFunc(h.pause, func() { h.resendDue(n) })
			}
		}
		hubsMu.Unlock()
	}
}

// resendDue sends again the SUBSCRIBEs that failed (see sync), if the
// timer of retry n is the last one made.
func (h *hub) resendDue(n uint64) {
	hubsMu.Lock()
	defer hubsMu.Unlock()
	if h.stopped || n != h.retries {
		return
	}
	for ch := range h.resend {
		h.changedLocked(ch)
	}
}

// listen wakes the waiters named by each message, and every waiter of a
// channel each time the channel is subscribed (messages may have been
// missed before): after a reconnection go-redis subscribes every channel
// again, so every waiter of the client asks once more. After a failure it
// waits a little longer each time, up to a Poll, so as not to hammer a
// Redis that is coming back; the waiters poll meanwhile.
func (h *hub) listen() {
	pause := backoff(0, h.poll)
	for h.ctx.Err() == nil {
		msg, err := h.ps.Receive(h.ctx)
		if err == nil {
			pause = backoff(0, h.poll)
			h.dispatch(msg)
			continue
		}
		// The next Receive connects and subscribes again.
		if !sleep(h.ctx, pause) {
			return
		}
		pause = backoff(pause, h.poll)
	}
}

// backoff returns the pause after pause (0 for the first) while Redis
// fails: twice as long, from 10 ms, and at most poll (a Poll: 10 ms to an
// hour), which it saturates at rather than overflow.
func backoff(pause, poll time.Duration) time.Duration {
	const first = 10 * time.Millisecond
	if pause > poll/2 {
		return poll
	}
	return min(max(2*pause, first), poll)
}

// dispatch passes a pub/sub event to the Semaphore whose channel it is on.
func (h *hub) dispatch(msg any) {
	var ch string
	switch m := msg.(type) {
	case *redis.Subscription:
		if m.Kind != "subscribe" {
			return
		}
		ch = m.Channel
	case *redis.Message:
		ch = m.Channel
	default:
		return
	}
	hubsMu.Lock()
	c := h.chans[ch]
	hubsMu.Unlock()
	if c != nil {
		c.to.dispatch(msg)
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

// subscribe joins the hub of s's client if s has waiters and has not.
func (s *Semaphore) subscribe() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.hub == nil && len(s.waiters) > 0 {
		s.joinLocked()
	}
}

// leave forgets a waiter, and leaves the hub with the last one.
func (s *Semaphore) leave(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.waiters, id)
	if k := s.keyed; k != nil {
		k.wmu.Lock()
		delete(k.waiting, id)
		k.wmu.Unlock()
	}
	if len(s.waiters) == 0 && s.hub != nil {
		s.dropLocked()
	}
}

// signal passes g to a waiter without blocking; a grant replaces a plain
// wake-up waiting in the buffer. Senders hold s.mu.
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
