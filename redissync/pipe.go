package redissync

import (
	"context"
	"errors"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// maxUnderway bounds the round trips that a pipe has under way at once.
// Past it, the scripts wait in the pipe's queue and go together, in one
// pipeline, as soon as a round trip ends: under load a round trip carries
// many scripts, and neither Redis nor the client pays a system call for
// each (most of a contended lock's cost on loopback). Below it, a script
// goes at once, by itself: an uncontended call waits for nobody.
//
// One, as measured (BenchmarkRedisKeyedLockContended, 32 goroutines on 4
// clients, a 2-core machine): two under way take 8 to 10% fewer locks a
// second than one, and four about half as many. Each round trip more under
// way is one more that carries a script or two where it could carry the
// lot, and pays its system calls for them.
const maxUnderway = 1

// A pipe carries the scripts of a Semaphore, or of every key of a Keyed,
// to Redis: each at once while fewer than maxUnderway round trips are under
// way, and those that come meanwhile together, in order, in the next
// round trip.
//
// A round trip keeps its place until it ends, not until its callers stop
// waiting: a Redis that stalls never has more than maxUnderway round trips
// of the pipe to answer when it wakes. With a client that may never end a
// round trip (one that does not honour deadlines, with no read timeout, on
// a connection that stopped answering), that would stop every script of the
// pipe for good: there, a round trip keeps its place for hold at most, and
// then the scripts queued go in a round trip of their own. Such a Redis has
// one round trip more to answer for each hold that it stalls.
type pipe struct {
	client  redis.UniversalClient
	timeout time.Duration
	hold    time.Duration // how long a round trip keeps its place; 0: until it ends

	mu       sync.Mutex
	underway int   // guarded by mu
	queue    []*op // waiting for a round trip, oldest first; guarded by mu

	// lateGen counts the release round trips that a client honouring
	// deadlines dropped unanswered: see lateWake and lateCap.
	lateGen atomic.Uint64
}

// A place is a round trip's place in its pipe, from push to ended, in a pipe
// with a hold: past it, a timer gives the place up (expire). A pipe without
// one hands out nil places, which only ended ends.
type place struct {
	timer *time.Timer
	gone  bool // ended, or given up by the timer; guarded by the pipe's mu
}

// take starts the hold of a place just taken, if p has a hold; p.mu must be
// held.
func (p *pipe) take() *place {
	if p.hold == 0 {
		return nil // nothing to give up: no allocation per round trip
	}
	pl := new(place)
	pl.timer = time.AfterFunc(p.hold, func() { p.expire(pl) })
	return pl
}

// expire gives up the place of a round trip that has not ended within the
// pipe's hold: the scripts queued go in a pipeline of their own, in its
// place, and the round trip's end, if it comes, changes nothing.
func (p *pipe) expire(pl *place) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if pl.gone {
		return
	}
	pl.gone = true
	if len(p.queue) == 0 {
		p.underway--
		return
	}
	next := p.queue
	p.queue = nil
	go p.pipeline(next, p.take())
}

// An op is a script waiting in a pipe's queue, then in a pipeline.
type op struct {
	c   *call
	cmd []any // c's command: see call.command
	v   any
	err error
	// panicked is what the client panicked with (a hook of the user's)
	// while it ran the pipeline, for the caller to panic with in turn.
	panicked any
	done     chan struct{} // closed once v, err and panicked are set
}

// push queues a script for the next pipeline, unless a place for a round trip
// is free: then it takes it and returns it, for the caller's round trip.
func (p *pipe) push(c *call, cmd []any) (*op, *place) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.underway < maxUnderway {
		p.underway++
		return nil, p.take()
	}
	o := &op{c: c, cmd: cmd, done: make(chan struct{})}
	p.queue = append(p.queue, o)
	return o, nil
}

// drop takes o out of the queue; it reports whether o was still there,
// never sent.
func (p *pipe) drop(o *op) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	i := slices.Index(p.queue, o)
	if i < 0 {
		return false
	}
	p.queue = slices.Delete(p.queue, i, i+1)
	return true
}

// ended is called as a round trip ends, with its place and the batch it
// carried (nil for a caller's own). The scripts queued meanwhile go next in
// its place: it returns them, and the place of their round trip, to the
// pipeline that ended, or starts a pipeline for them when the round trip
// was a caller's, so that the caller can return. With none queued, it frees
// the place and returns nil. A place given up already (see expire) is not
// the round trip's to pass on.
func (p *pipe) ended(pl *place, running []*op) ([]*op, *place) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if pl != nil {
		pl.timer.Stop()
		if pl.gone {
			return nil, nil
		}
		pl.gone = true
	}
	if len(p.queue) == 0 {
		p.underway--
		return nil, nil
	}
	next := p.queue
	p.queue = running[:0] // the slice of the pipeline that ended, reused
	if running == nil {
		go p.pipeline(next, p.take())
		return nil, nil
	}
	return next, p.take()
}

// pipeline runs batch in the round trip of place pl, then the scripts queued
// meanwhile, until none is.
func (p *pipe) pipeline(batch []*op, pl *place) {
	over := false
	defer func() {
		if !over {
			// A client hook called runtime.Goexit in run: this goroutine
			// ends, and its place passes to the scripts queued, or is
			// freed, as at the end of any round trip (see run).
			p.ended(pl, nil)
		}
	}()
	for batch != nil {
		p.run(batch)
		clear(batch)
		// The callers just answered are runnable, and most send their
		// next script at once (a Release after an Acquire): let them
		// queue it before the queue goes, so that it joins this next
		// round trip rather than waiting a whole one for the one after.
		runtime.Gosched()
		batch, pl = p.ended(pl, batch)
	}
	over = true
}

// errPipelineGoexit is the error of the scripts of a pipeline in which a
// client hook called runtime.Goexit.
var errPipelineGoexit = errors.New("redissync: a client hook called runtime.Goexit in a pipeline")

// run sends every script of batch in one pipeline, and tells each its
// reply. The pipeline carries no caller's context (it serves them all): the
// client's hooks see a background one. It ends at the Timeout.
func (p *pipe) run(batch []*op) {
	told := 0
	returned := false
	defer func() {
		// A panic of the client goes to every caller still waiting; the
		// pipe goes on with the scripts queued meanwhile. A Goexit (for
		// which recover returns nil) ends the goroutine: its callers get
		// an error, and the pipeline's place passes on (see pipeline).
		if returned {
			return
		}
		r := recover()
		for _, o := range batch[told:] {
			if r != nil {
				o.panicked = r
			} else {
				o.err = errPipelineGoexit
			}
			close(o.done)
		}
	}()
	freesFirst(batch)
	ctx, cancel := context.WithTimeout(context.Background(), p.timeout)
	defer cancel()
	cmds := make([]*redis.Cmd, len(batch))
	var failed error // the pipeline's, for a command a hook left unanswered
	send := func(which []int, eval bool) {
		_, failed = p.client.Pipelined(ctx, func(pl redis.Pipeliner) error {
			for _, i := range which {
				o := batch[i]
				if eval {
					cmds[i] = o.c.sc.Eval(ctx, pl, o.c.keyStrings(), o.c.args(o.cmd)...)
				} else {
					cmds[i] = pl.Do(ctx, o.cmd...)
				}
			}
			return nil
		})
	}
	all := make([]int, len(batch))
	for i := range all {
		all[i] = i
	}
	send(all, false)
	// Redis forgets scripts on a restart or a SCRIPT FLUSH: send them again
	// whole to those it refused.
	again := all[:0]
	for i, cmd := range cmds {
		// (HasErrorPrefix allocates even for no error.)
		if err := cmd.Err(); err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
			again = append(again, i)
		}
	}
	if len(again) > 0 {
		send(again, true)
	}
	for i, o := range batch {
		o.v, o.err = cmds[i].Result()
		if o.v == nil && o.err == nil {
			// Redis's nil is an error (redis.Nil): a hook failed the
			// pipeline without a word to its commands.
			o.err = failed
			if o.err == nil {
				o.err = errors.New("redissync: no reply in the pipeline")
			}
		}
		told++
		close(o.done)
	}
	returned = true
}

// freesFirst puts the releases of batch first, in their order, then the
// other scripts, in theirs. A pipeline carries the Releases that its last
// callers sent on being granted (see pipeline), behind the Acquires that
// came meanwhile: sent first, they free their keys a few scripts sooner,
// and an Acquire of the same round trip for a key just released takes it
// on the spot, by the script's fast way, where it would have joined the
// line to be handed it by the Release that followed. The scripts of one
// pipeline were all queued at once, their callers all waiting: none is
// before another for its callers, and each script keeps the order of the
// line, which Redis holds. (Measured with 32 goroutines on 4 clients over
// 100 keys: 9% fewer Releases find a line, 0.215 a take from 0.236.)
func freesFirst(batch []*op) {
	slices.SortStableFunc(batch, func(a, b *op) int {
		return b2i(b.c.frees) - b2i(a.c.frees)
	})
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// wait waits for o's reply until ctx ends or the Timeout passes. If either
// comes first, it returns ctx.Err() or context.DeadlineExceeded, and for an
// attempt of id (not "") that Redis may yet run, takes back what it leaves
// once its round trip has ended.
//
// A timer of its own, not a context.WithTimeout: nothing but this wait
// needs the deadline (the pipeline has its own), and a context costs
// three allocations more on every script queued.
func (s *Semaphore) wait(ctx context.Context, o *op, id string) (any, error) {
	t := time.NewTimer(s.timeout)
	defer t.Stop()
	// ctx's Done and Err are the caller's code: if one panics, o is given
	// up as at ctx's end, else it would go on to Redis with nobody to take
	// back what it leaves there.
	settled := false
	defer func() {
		if !settled {
			s.giveUp(o, id)
		}
	}()
	var err error
	select {
	case <-o.done:
		settled = true
		return s.answer(o, id)
	case <-ctx.Done():
		err = ctx.Err()
	case <-t.C:
		err = context.DeadlineExceeded
	}
	settled = true
	if v, answered, aerr := s.giveUp(o, id); answered {
		return v, aerr
	}
	return nil, err
}

// giveUp ends a wait for o: o is taken out of the queue if it was never
// sent; its answer is returned, answered true, if it came meanwhile; else,
// for an attempt of id (not ""), what the script leaves is taken back once
// it has run, and the reply of a release is read when it comes (see
// lateRelease).
func (s *Semaphore) giveUp(o *op, id string) (v any, answered bool, err error) {
	if s.pipe.drop(o) {
		return nil, false, nil // never sent
	}
	// An answer that came as the wait ended is still an answer.
	select {
	case <-o.done:
		v, err = s.answer(o, id)
		return v, true, err
	default:
	}
	switch {
	case id != "":
		go func() {
			<-o.done
			if o.panicked != nil {
				// The panic hides whether the client gave the
				// pipeline up unanswered: see takeBackPanicked.
				s.takeBackPanicked(id)
				return
			}
			if s.unanswered(o.err) {
				time.AfterFunc(s.roundTrip, func() { s.takeBack(id) })
				return
			}
			s.takeBack(id)
		}()
	case o.c == s.releaseCall:
		go func() {
			<-o.done
			// A panic hides whether the client gave the pipeline up
			// unanswered, as for an attempt (see takeBackPanicked):
			// with a client that honours deadlines, its bytes may yet
			// land, and nobody runs the release again here. Noted
			// before lateRelease wakes the waiters: see lateWake.
			if s.unanswered(o.err) || (o.panicked != nil && s.ctxTimeouts) {
				s.lateWake(o.c)
			}
			s.lateRelease(o.v, o.err, o.panicked)
		}()
	}
	return nil, false, nil
}

// answer returns o's reply to its caller, who waited for it. If the client
// gave up on the pipeline unanswered, an attempt of id (not "") may yet
// reach Redis, as one sent alone may (see evalThen): what it leaves is taken
// back once it would have.
func (s *Semaphore) answer(o *op, id string) (any, error) {
	switch {
	case id == "":
		if s.unanswered(o.err) {
			s.lateWake(o.c)
		}
	case o.err == errPipelineGoexit:
		// The script may have run, its reply lost with the goroutine.
		s.takeBack(id)
	case s.unanswered(o.err):
		time.AfterFunc(s.roundTrip, func() { s.takeBack(id) })
	}
	return o.result()
}

// unanswered reports whether err ended a pipeline whose bytes may yet reach
// Redis: a client that honours deadlines gave up on it, and Redis did not
// say no.
func (s *Semaphore) unanswered(err error) bool {
	return err != nil && s.ctxTimeouts && !saidNo(err)
}

// saidNo reports whether err is Redis's answer: the script ran, and failed.
// A function of its own, called only for an error: the target of errors.As
// escapes, and would cost every round trip an allocation where it is
// declared.
func saidNo(err error) bool {
	var answered redis.Error
	return errors.As(err, &answered)
}

// result returns o's reply, or panics with the client's panic.
func (o *op) result() (any, error) {
	if o.panicked != nil {
		panic(o.panicked)
	}
	return o.v, o.err
}
