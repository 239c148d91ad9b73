package ratelimit

import (
	"context"
	"errors"
	"math"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
)

// The fuzz targets below drive a limiter with a script of requests at times
// that never go back. The exact limiters' Decisions are checked against a
// model that knows nothing of their representation; the approximate window's,
// against what it promises. Each step of a script is three
// bytes: how far the clock moves, and how many events to ask for. A step
// whose first byte is 0xff after a refusal asks again for as many, exactly when
// the refusal said to (RetryAfter) or a nanosecond before, which is where an
// off-by-one in RetryAfter would show.
//
// `go test` runs the seeds; `go test -fuzz FuzzSlidingWindow ./ratelimit` and
// the like search further.

// fuzzStart is the clock's reading when a script starts: far from 0, as the
// monotonic clock is.
const fuzzStart = int64(1) << 40

// startOf returns the clock's reading when a script starts, from a bit of the
// fuzzer's: fuzzStart, or far below 0, as a synctest bubble's clock reads.
func startOf(bit bool) int64 {
	if bit {
		return -fuzzStart << 19 // about 18 years before
	}
	return fuzzStart
}

// addSatModel and subSatModel are a+b and a-b for the models, saturated at
// the ends of int64: a time past them never comes.
func addSatModel(a, b int64) int64 {
	switch {
	case b > 0 && a > math.MaxInt64-b:
		return math.MaxInt64
	case b < 0 && a < math.MinInt64-b:
		return math.MinInt64
	}
	return a + b
}

func subSatModel(a, b int64) int64 {
	if b == math.MinInt64 {
		return addSatModel(addSatModel(a, math.MaxInt64), 1)
	}
	return addSatModel(a, -b)
}

// A refusal is the last refused request, for a step to retry: how many it
// asked for and its RetryAfter, or none.
type refusal struct {
	n     int
	after int64
}

// step decodes the next step of script: the new time, the count asked for
// (between 1 and max), and whether it retries the last refusal, early by a
// nanosecond or on time.
func step(script []byte, now int64, last refusal, max int) (next int64, n int, retry, early bool, rest []byte) {
	if script[0] == 0xff && last.after > 0 && last.after < math.MaxInt64 && last.after <= subSatModel(math.MaxInt64, now) {
		// A refusal that said to come back after the clock's end, or after
		// math.MaxInt64 (which says: longer than a Duration holds), cannot
		// be retried: the clock ends at math.MaxInt64.
		early = script[1]&1 == 1
		next = now + last.after
		if early {
			next--
		}
		return next, last.n, true, early, script[3:]
	}
	next = addSatModel(now, int64(script[0])<<(script[1]%24)) // up to about two seconds
	return next, 1 + int(script[2])%max, false, false, script[3:]
}

// windowParams decodes a window's limit (1 to 16) and its length in
// nanoseconds, from the fuzzer's two numbers: up to about 2^45, or if the
// top four bits of limitB are set, within 2^16 of math.MaxInt64, where sums
// of times must saturate.
func windowParams(limitB uint8, windowB uint16) (int, int64) {
	if limitB>>4 == 15 {
		return 1 + int(limitB%16), math.MaxInt64 - int64(windowB)
	}
	return 1 + int(limitB%16), 1 + int64(windowB)<<(limitB>>4)
}

func FuzzSlidingWindow(f *testing.F) {
	f.Add(uint8(3), uint16(1000), []byte{0, 0, 0, 0, 0, 1, 0, 0, 2, 0xff, 0, 0, 0xff, 1, 0})
	f.Add(uint8(1), uint16(0), []byte{0, 0, 0, 1, 0, 0, 0xff, 1, 0, 0xff, 0, 0})
	f.Add(uint8(15), uint16(65535), []byte{9, 3, 4, 0, 0, 15, 7, 9, 3, 0xff, 1, 2, 0xff, 0, 2, 200, 20, 1})
	// Windows near math.MaxInt64, on the real clock and a bubble's.
	f.Add(uint8(0xf2), uint16(0), []byte{0, 0, 0, 0, 0, 1, 0, 0, 2, 0xff, 0, 0, 200, 23, 1})
	f.Add(uint8(0xf2), uint16(7), []byte{0, 0, 0, 0, 0, 1, 0, 0, 2, 0xff, 0, 0, 200, 23, 1})
	f.Fuzz(func(t *testing.T, limitB uint8, windowB uint16, script []byte) {
		limit, window := windowParams(limitB, windowB)
		s := NewSlidingWindow(limit, time.Duration(window))

		// The model counts in differences of times, which fit in an int64
		// whatever the window.
		var grants []int64 // every grant, oldest first: the model
		start := startOf(windowB&1 == 1)
		now, last := start, refusal{}
		for len(script) >= 3 {
			var n int
			now, n, _, _, script = step(script, now, last, limit+1) // limit+1 never fits

			// The grants inside the window ending at now.
			first := len(grants)
			for first > 0 && subSatModel(now, grants[first-1]) < window {
				first--
			}
			in := grants[first:]
			want := len(in)+n <= limit

			var d Decision
			got := s.take(n, now, &d, nil)
			if got != want || d.Allowed != got {
				t.Fatalf("at %d, %d asked, %d in the window: take = %v (Allowed %v), want %v",
					now-start, n, len(in), got, d.Allowed, want)
			}
			if want {
				for range n {
					grants = append(grants, now)
				}
				in = grants[first:]
			}

			wantRetry := time.Duration(0)
			switch {
			case want:
			case n > limit:
				wantRetry = -1
			default:
				// Until enough of the oldest grants in the window leave it.
				wantRetry = time.Duration(max(0, window-subSatModel(now, in[len(in)+n-limit-1])))
			}
			wantReset := time.Duration(0)
			if len(grants) > 0 {
				wantReset = time.Duration(max(0, window-subSatModel(now, grants[len(grants)-1])))
			}
			if d.Limit != limit || d.Window != time.Duration(window) || d.Remaining != limit-len(in) ||
				d.RetryAfter != wantRetry || d.ResetAfter != wantReset {
				t.Fatalf("at %d, %d asked, grants in window %v: %+v; want Remaining %d, RetryAfter %v, ResetAfter %v",
					now-start, n, in, d, limit-len(in), wantRetry, wantReset)
			}
			last = refusal{n, int64(max(0, d.RetryAfter))}
		}
	})
}

func FuzzTokenBucket(f *testing.F) {
	f.Add(uint16(1000), uint8(3), []byte{0, 0, 0, 0, 0, 1, 0, 0, 2, 0xff, 0, 0, 0xff, 1, 0})
	f.Add(uint16(1), uint8(1), []byte{0, 0, 0, 0, 0, 0, 0xff, 1, 0, 0xff, 0, 0, 3, 20, 0})
	f.Add(uint16(0), uint8(4), []byte{0, 0, 3, 0, 0, 3, 0, 0, 4}) // no limit on the rate
	f.Add(uint16(7), uint8(200), []byte{0, 0, 199, 0xff, 1, 7, 0xff, 0, 7, 5, 0, 3})
	f.Add(uint16(0xfe00), uint8(16), []byte{1, 17, 9, 0, 0, 16, 0xff, 1, 2, 0xff, 0, 2})
	// Rates where whole nanoseconds round a token's cost far up, and above
	// one token a nanosecond.
	f.Add(uint16(0xff02), uint8(16), []byte{1, 1, 9, 0, 0, 16, 0xff, 1, 2, 0xff, 0, 2, 3, 0, 5})
	f.Add(uint16(0xff0c), uint8(200), []byte{0, 0, 199, 0xff, 1, 7, 0xff, 0, 7, 5, 0, 3})
	f.Fuzz(func(t *testing.T, rateB uint16, burstB uint8, script []byte) {
		rate := math.Inf(1)
		switch {
		case rateB >= 0xff00:
			// From 1e8 a second to 2.56e10, beyond the clock's 1e9.
			rate = float64(rateB-0xff00+1) * 1e8
		case rateB > 0:
			// From one event a minute to about 65000 a second, with
			// fractions.
			rate = float64(rateB) * float64(rateB) / 65535
			rate = max(rate, 1.0/60)
		}
		burst := 1 + int(burstB)
		b := NewTokenBucket(rate, burst)
		tokenNs := int64(math.Ceil(1e9 / rate)) // as documented: whole nanoseconds, rounded up

		// The model counts credit, in nanoseconds' worth of tokens: it grows
		// with time up to burst tokens' worth, and each event spends tokenNs.
		credit := int64(burst) * tokenNs
		full := credit
		now, last := fuzzStart, refusal{}
		for len(script) >= 3 {
			var n int
			before := now
			now, n, _, _, script = step(script, now, last, burst+1) // burst+1 never fits
			credit = min(full, credit+now-before)
			cost := int64(n) * tokenNs
			want := n <= burst && credit >= cost

			var d Decision
			got := b.take(n, now, false, &d, nil)
			if got != want || d.Allowed != got {
				t.Fatalf("rate %v, burst %d, at %d: %d asked with credit %d ns, token %d ns: take = %v, want %v",
					rate, burst, now-fuzzStart, n, credit, tokenNs, got, want)
			}
			if want {
				credit -= cost
			}

			wantRemaining := burst
			if tokenNs > 0 {
				wantRemaining = int(credit / tokenNs)
			}
			wantRetry := time.Duration(0)
			switch {
			case want:
			case n > burst:
				wantRetry = -1
			default:
				wantRetry = time.Duration(cost - credit)
			}
			if d.Limit != burst || d.Window != time.Duration(full) || d.Remaining != wantRemaining ||
				d.RetryAfter != wantRetry || d.ResetAfter != time.Duration(full-credit) {
				t.Fatalf("rate %v, burst %d, at %d: %d asked, credit %d ns after: %+v; want Remaining %d, RetryAfter %v, ResetAfter %v",
					rate, burst, now-fuzzStart, n, credit, d, wantRemaining, wantRetry, time.Duration(full-credit))
			}
			last = refusal{n, int64(max(0, d.RetryAfter))}

			// A time earlier than now, on a copy of the bucket: it finds the
			// tokens there were then, fewer by its lateness, however late
			// (over an hour beyond a full refill, it was once taken for a
			// time of another clock, and found the bucket full). Only where
			// the model knows the bucket's state exactly (when not full),
			// and where that state could be the clock's: the script's times
			// run ahead of the clock, and a state more than an hour beyond
			// a full refill ahead of it is rightly taken for another's.
			if n <= burst && credit < full && now-credit <= nowNs()+int64(time.Hour) {
				late := [...]int64{1, tokenNs, full / 2, full, full + int64(time.Hour) + 1, 2*full + 2*int64(time.Hour)}[uint64(now)%6]
				c := NewTokenBucket(rate, burst)
				c.state.Store(b.state.Load())
				if got, want := c.take(n, now-late, true, nil, nil), credit-late >= cost; got != want {
					t.Fatalf("rate %v, burst %d, at %d: %d asked %d ns late, with credit %d ns at now: take = %v, want %v",
						rate, burst, now-fuzzStart, n, late, credit, got, want)
				}
			}
		}
	})
}

// FuzzSlidingWindowCounter checks what the approximate window promises: the
// estimate it allows by never exceeds the limit, and RetryAfter is never early
// (asking again then succeeds) and late by at most the nanosecond that
// rounding the estimate's float arithmetic up can add.
func FuzzSlidingWindowCounter(f *testing.F) {
	f.Add(uint8(3), uint16(1000), []byte{0, 0, 0, 0, 0, 1, 0, 0, 2, 0xff, 0, 0, 0xff, 1, 0})
	f.Add(uint8(10), uint16(99), []byte{0, 0, 9, 50, 0, 5, 0xff, 1, 3, 0xff, 0, 3, 60, 0, 9})
	// Refused early in the next fixed window, while the previous one's weight
	// drops: 7 of them weigh 6.58, and 4 more fit at 14.29 ns in, not 14.
	f.Add(uint8(9), uint16(99), []byte{0, 0, 6, 30, 0, 3, 0xff, 1, 0, 0xff, 0, 0})
	f.Add(uint8(15), uint16(65535), []byte{9, 3, 4, 0, 0, 15, 7, 9, 3, 0xff, 1, 2, 0xff, 0, 2, 200, 20, 1})
	f.Add(uint8(0xf2), uint16(0), []byte{0, 0, 0, 0, 0, 1, 0, 0, 2, 0xff, 0, 0, 200, 23, 1})
	f.Add(uint8(0xf2), uint16(7), []byte{0, 0, 0, 0, 0, 1, 0, 0, 2, 0xff, 0, 0, 200, 23, 1})
	f.Fuzz(func(t *testing.T, limitB uint8, windowB uint16, script []byte) {
		limit, window := windowParams(limitB, windowB)
		c := NewSlidingWindowCounter(limit, time.Duration(window))

		now, last := startOf(windowB&1 == 1), refusal{}
		for len(script) >= 3 {
			var n int
			var retry, early bool
			now, n, retry, early, script = step(script, now, last, limit+1)
			if early && last.after >= 2 {
				now-- // two nanoseconds early
			}

			c.w.q.Lock()
			c.advanceLocked(now)
			estimate := c.countLocked(now)
			c.w.q.Unlock()

			var d Decision
			got := c.take(n, now, &d, nil)
			if got && estimate+float64(n) > float64(limit) {
				t.Fatalf("at %d: allowed %d with an estimate of %v, limit %d", now-fuzzStart, n, estimate, limit)
			}
			if retry && !early && !got {
				t.Fatalf("at %d: %d refused when the last refusal said to come back (%v)", now-fuzzStart, n, d)
			}
			if early && got {
				t.Fatalf("at %d: %d allowed two nanoseconds before the last refusal said to come back", now-fuzzStart, n)
			}
			if n > limit && d.RetryAfter != -1 || n <= limit && !got && d.RetryAfter <= 0 {
				t.Fatalf("at %d: %d refused with RetryAfter %v", now-fuzzStart, n, d.RetryAfter)
			}
			last = refusal{n, int64(max(0, d.RetryAfter))}
		}
	})
}

// A waitModel is what a limiter should decide, kept the plain way, for the
// fuzz targets of WaitN.
type waitModel interface {
	// allow takes n events at now if they fit.
	allow(n int, now int64) bool
	// fitsAt returns the earliest time from on at which n events fit.
	fitsAt(n int, from int64) int64
	// retryAfter is a refusal's RetryAfter, when ahead events wait before
	// n: until they all fit, or for a window where they cannot all fit at
	// once, a window.
	retryAfter(ahead, n int, now int64) int64
	// most is the most events that ever fit at once.
	most() int
}

// bucketModel is a TokenBucket as credit: nanoseconds' worth of tokens, up to
// full, as they were at last.
type bucketModel struct {
	tokenNs, full, credit, last int64
	burst                       int
}

func (m *bucketModel) creditAt(t int64) int64 { return min(m.full, m.credit+t-m.last) }

func (m *bucketModel) allow(n int, now int64) bool {
	c, cost := m.creditAt(now), int64(n)*m.tokenNs
	if n > m.burst || c < cost {
		return false
	}
	m.credit, m.last = c-cost, now
	return true
}

func (m *bucketModel) fitsAt(n int, from int64) int64 {
	return from + max(0, int64(n)*m.tokenNs-m.creditAt(from))
}

func (m *bucketModel) most() int { return m.burst }

func (m *bucketModel) retryAfter(ahead, n int, now int64) int64 { return m.fitsAt(ahead+n, now) - now }

// windowModel is a SlidingWindow as the times of its grants.
type windowModel struct {
	limit  int
	window int64
	grants []int64
}

// in returns the grants inside the window that ends at now. It counts in
// differences of times, which fit in an int64 whatever the window.
func (m *windowModel) in(now int64) []int64 {
	first := len(m.grants)
	for first > 0 && now-m.grants[first-1] < m.window {
		first--
	}
	return m.grants[first:]
}

func (m *windowModel) allow(n int, now int64) bool {
	if len(m.in(now))+n > m.limit {
		return false
	}
	for range n {
		m.grants = append(m.grants, now)
	}
	return true
}

func (m *windowModel) fitsAt(n int, from int64) int64 {
	in := m.in(from)
	if k := len(in) + n - m.limit; k > 0 {
		return addSatModel(in[k-1], m.window) // the k oldest must leave first
	}
	return from
}

func (m *windowModel) most() int { return m.limit }

func (m *windowModel) retryAfter(ahead, n int, now int64) int64 {
	if ahead+n > m.limit {
		return m.window
	}
	in := m.in(now)
	if k := len(in) + ahead + n - m.limit; k > 0 {
		return m.window - (now - in[k-1])
	}
	return 0
}

// waitLimiter is what the fuzz targets of WaitN drive.
type waitLimiter interface {
	Taker
	AllowN(n int) bool
}

// FuzzTokenBucketWait runs a script of WaitNs, AllowNs, ends of waiters'
// ctxs and the passing of virtual time on a TokenBucket, against bucketModel:
// waiters are served first in, first out, each at the moment its tokens are
// there; AllowN refuses while any waits. After each step, every WaitN's
// outcome and AllowN's answer must match. Each step is two bytes: an
// operation and its argument. One operation has a waiter give up and, at
// once, a newcomer enter with a deadline (see fuzzWait).
func FuzzTokenBucketWait(f *testing.F) {
	f.Add(uint8(2), uint8(1), []byte{1, 1, 0, 1, 0, 2, 2, 3, 1, 1, 2, 4, 2, 8, 1, 0})
	f.Add(uint8(3), uint8(0), []byte{0, 2, 0, 0, 0, 1, 3, 1, 2, 5, 3, 0, 2, 9, 1, 2})
	f.Add(uint8(1), uint8(5), []byte{0, 3, 0, 4, 0, 0, 2, 2, 1, 0, 2, 7, 2, 7, 1, 1})
	// Take while waiters queue: refused, with RetryAfter after theirs.
	f.Add(uint8(2), uint8(3), []byte{1, 2, 0, 1, 0, 2, 4, 0, 4, 2, 4, 3, 2, 5, 4, 0, 3, 0, 4, 1})
	// Above the clock's rate, and near the slowest allowed.
	f.Add(uint8(3), uint8(247), []byte{0, 3, 0, 4, 0, 0, 2, 2, 1, 0, 2, 7, 2, 7, 1, 1})
	f.Add(uint8(3), uint8(248), []byte{1, 2, 0, 1, 0, 2, 4, 0, 4, 2, 4, 3, 2, 5, 4, 0, 3, 0, 4, 1})
	// Newcomers with deadlines as waiters give up; one whose tokens come
	// exactly at its deadline.
	f.Add(uint8(1), uint8(0), []byte{1, 0, 0, 0, 0, 0, 5, 1, 5, 2, 0, 0, 5, 3, 2, 2, 5, 0, 5, 7})
	f.Fuzz(func(t *testing.T, burstB, rateB uint8, script []byte) {
		synctest.Test(t, func(t *testing.T) {
			burst, rate := 1+int(burstB%4), float64(1+rateB%8)
			switch {
			case rateB == 247:
				rate = 2e9 // kept as 1e9
			case rateB > 247:
				rate = 3e-8 * float64(rateB-247) // a token a year, or more
			}
			b := NewTokenBucket(rate, burst)
			tokenNs := int64(math.Ceil(1e9 / rate))
			m := &bucketModel{tokenNs: tokenNs, full: int64(burst) * tokenNs, burst: burst, last: nowNs()}
			m.credit = m.full
			fuzzWait(t, b, m, min(time.Duration(tokenNs), 1000*time.Hour), script)
		})
	})
}

// FuzzSlidingWindowWait is FuzzTokenBucketWait for a SlidingWindow, against
// windowModel.
func FuzzSlidingWindowWait(f *testing.F) {
	f.Add(uint8(2), uint8(1), []byte{1, 1, 0, 1, 0, 2, 2, 3, 1, 1, 2, 4, 2, 8, 1, 0})
	f.Add(uint8(3), uint8(0), []byte{0, 2, 0, 0, 0, 1, 3, 1, 2, 5, 3, 0, 2, 9, 1, 2})
	f.Add(uint8(1), uint8(5), []byte{0, 3, 0, 4, 0, 0, 2, 2, 1, 0, 2, 7, 2, 7, 1, 1})
	f.Add(uint8(2), uint8(3), []byte{1, 2, 0, 1, 0, 2, 4, 0, 4, 2, 4, 3, 2, 5, 4, 0, 3, 0, 4, 1})
	f.Add(uint8(3), uint8(1), []byte{4, 0, 4, 1, 0, 1, 0, 0, 4, 0, 4, 1, 2, 3, 4, 2})
	// A window near math.MaxInt64: the waiters' waits saturate.
	f.Add(uint8(2), uint8(255), []byte{1, 2, 0, 1, 0, 2, 4, 0, 4, 2, 4, 3, 2, 5, 4, 0, 3, 0, 4, 1})
	f.Add(uint8(1), uint8(3), []byte{1, 0, 0, 0, 0, 0, 5, 1, 5, 2, 0, 0, 5, 3, 2, 2, 5, 0, 5, 7})
	f.Add(uint8(2), uint8(255), []byte{1, 1, 0, 0, 0, 0, 5, 1, 5, 2, 0, 0, 5, 3, 2, 2, 5, 0, 5, 7})
	f.Fuzz(func(t *testing.T, limitB, windowB uint8, script []byte) {
		synctest.Test(t, func(t *testing.T) {
			limit, window := 1+int(limitB%4), time.Duration(1+windowB%8)*time.Second
			tick := window / 4
			if windowB >= 248 {
				window, tick = time.Duration(math.MaxInt64-int64(windowB-248)), time.Hour
			}
			s := NewSlidingWindow(limit, window)
			fuzzWait(t, s, &windowModel{limit: limit, window: int64(window)}, tick, script)
		})
	})
}

// errQueued is fuzzWait's mark of a waiter the model queues.
var errQueued = errors.New("queued")

func fuzzWait(t *testing.T, l waitLimiter, m waitModel, tick time.Duration, script []byte) {
	type waiter struct {
		n      int
		cancel context.CancelFunc
		res    chan error
	}
	var queue []*waiter    // waiting, in order
	var pending []*waiter  // returned in the model, not yet checked
	var want []error       // what pending returned
	var everyone []*waiter // for the end
	// serve grants the waiters whose events fit by now, in order, each at
	// the moment they do.
	from := nowNs()
	serve := func(now int64) {
		for len(queue) > 0 {
			at := m.fitsAt(queue[0].n, from)
			if at > now {
				break
			}
			if !m.allow(queue[0].n, at) {
				t.Fatalf("model: %d events do not fit at %d, when fitsAt said", queue[0].n, at)
			}
			pending, want = append(pending, queue[0]), append(want, nil)
			queue = queue[1:]
			from = at
		}
		from = now
	}
	for ; len(script) >= 2; script = script[2:] {
		op, arg := script[0]%6, int(script[1])
		n := 1 + arg%(m.most()+1) // m.most()+1 never fits
		switch op {
		case 0:
			ctx, cancel := context.WithCancel(t.Context())
			w := &waiter{n: n, cancel: cancel, res: make(chan error, 1)}
			everyone = append(everyone, w)
			go func() { w.res <- l.WaitN(ctx, n) }()
			now := nowNs()
			switch {
			case n > m.most():
				pending, want = append(pending, w), append(want, ErrExceedsBurst)
			case len(queue) == 0 && m.allow(n, now):
				pending, want = append(pending, w), append(want, nil)
			default:
				queue = append(queue, w)
				from = now
			}
		case 1:
			wantOK := len(queue) == 0 && m.allow(n, nowNs())
			require.Equal(t, wantOK, l.AllowN(n), "AllowN(%d) with %d waiting", n, len(queue))
		case 2:
			time.Sleep(time.Duration(arg%12) * tick / 2)
		case 4:
			// Take refuses while anyone waits, and counts its RetryAfter
			// from the events of those waiting.
			now := nowNs()
			d := l.Take(n)
			ahead := 0
			for _, w := range queue {
				ahead += w.n
			}
			wantOK := len(queue) == 0 && m.allow(n, now)
			require.Equal(t, wantOK, d.Allowed, "Take(%d) with %d events waiting", n, ahead)
			switch {
			case wantOK:
				require.Zero(t, d.RetryAfter)
			case n > m.most():
				require.Equal(t, time.Duration(-1), d.RetryAfter)
			default:
				require.Equal(t, time.Duration(m.retryAfter(ahead, n, now)), d.RetryAfter,
					"Take(%d) with %d events waiting", n, ahead)
			}
		case 3:
			if len(queue) == 0 {
				continue
			}
			i := arg % len(queue)
			w := queue[i]
			queue = append(queue[:i], queue[i+1:]...)
			w.cancel()
			pending, want = append(pending, w), append(want, context.Canceled)
		case 5:
			// A waiter gives up and at once, before its goroutine may have
			// run again, a newcomer enters with a deadline: the one that
			// gave up no longer counts ahead of it, and events that come
			// at or after the deadline fail it at once.
			if len(queue) > 0 {
				i := arg % len(queue)
				w := queue[i]
				queue = append(queue[:i], queue[i+1:]...)
				w.cancel()
				pending, want = append(pending, w), append(want, context.Canceled)
			}
			n = 1 + arg%m.most()
			_, isWindow := m.(*windowModel)
			now := nowNs()
			ahead := 0
			for _, w := range queue {
				ahead += w.n
			}
			d := max(1, time.Duration(1+arg%8)*tick/2) // a ctx not yet done
			deadline := now + int64(d)
			earliest := addSatModel(now, m.retryAfter(ahead, n, now))
			var res error
			switch {
			case len(queue) == 0 && m.allow(n, now):
			case earliest >= deadline:
				res = ErrWouldExceedDeadline
			case isWindow && ahead+n > m.most():
				// The earliest moment is a bound below (a window's waiters
				// wait for grants still to come): whether the deadline is
				// met is not the model's to tell.
				continue
			default:
				res = errQueued
			}
			ctx, cancel := context.WithTimeout(t.Context(), d)
			w := &waiter{n: n, cancel: cancel, res: make(chan error, 1)}
			everyone = append(everyone, w)
			go func() { w.res <- l.WaitN(ctx, n) }()
			if res == errQueued {
				queue = append(queue, w) // its events come before the deadline
				from = now
			} else {
				pending, want = append(pending, w), append(want, res)
			}
		}
		synctest.Wait()
		serve(nowNs())
		for i, w := range pending {
			require.NotEmpty(t, w.res, "WaitN(%d) still waits; the model says it returned %v", w.n, want[i])
			require.Equal(t, want[i], <-w.res, "WaitN(%d)", w.n)
		}
		pending, want = pending[:0], want[:0]
		for _, w := range queue {
			require.Empty(t, w.res, "WaitN(%d) returned while the model has it waiting", w.n)
		}
	}
	for _, w := range everyone {
		w.cancel()
	}
}
