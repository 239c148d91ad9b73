// Package adaptivesim is the simulated service that package adaptive is
// judged by (issue 42): a service of a given concurrent capacity, with its
// own first-in-first-out queue beyond it, service times drawn from a
// lognormal of median 10 ms and 99th percentile about 40 ms, Poisson
// arrivals, and clients that give up after 1 s. The service goes on with a
// call whose client gave up: the work nobody waits for, which is what drowns
// a service without a limit.
//
// Run must be called inside a testing/synctest bubble: it runs on virtual
// time, each phase taking no real time but what the goroutines cost.
package adaptivesim

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"time"
)

// Service times: a lognormal of median 10 ms whose 99th percentile is four
// times that (z = 2.326).
const (
	Median   = 10 * time.Millisecond
	Sigma    = 0.5959 // ln(4) / 2.326
	Deadline = time.Second
)

// Mean is the mean service time, exp(σ²/2) times the median: about 11.9 ms.
var Mean = time.Duration(float64(Median) * math.Exp(Sigma*Sigma/2))

// A Permit is a slot a Limiter handed out.
type Permit interface {
	// Done ends the call: err is nil for an answer, or the ctx's error for
	// a client that gave up.
	Done(err error)
}

// A Limiter is what the clients pass before they call the service.
type Limiter interface {
	Acquire(ctx context.Context) (Permit, error)
	Limit() int
}

// A Phase is a stretch of the run: arrivals at Rate a second, for Duration,
// to a service of Capacity concurrent calls.
type Phase struct {
	Name     string
	Duration time.Duration
	Rate     float64
	Capacity int
}

// Phases returns the four phases for a service of capacity c (the
// rates are those of c's throughput, c over the mean service time), each
// phase's duration scaled by scale: 10 s at half capacity, 20 s at three
// times, 20 s at the same rate with the capacity cut to c/2, 20 s back at c.
func Phases(c int, scale float64) []Phase {
	rate := float64(c) / Mean.Seconds()
	d := func(s float64) time.Duration { return time.Duration(s * scale * float64(time.Second)) }
	return []Phase{
		{"half load", d(10), rate / 2, c},
		{"3x load", d(20), 3 * rate, c},
		{"capacity cut", d(20), 3 * rate, c / 2},
		{"capacity back", d(20), 3 * rate, c},
	}
}

// A Result is what one phase's arrivals saw.
type Result struct {
	Phase     string
	Capacity  int
	Arrivals  int
	Good      int     // answered within the deadline
	Goodput   float64 // Good a second
	Admitted  int     // given a permit
	P99       time.Duration
	Shed      int           // refused by the limiter
	ShedMax   time.Duration // the longest a refused call took to be refused
	ShedP99   time.Duration // the 99th percentile of that
	Timeouts  int           // gave up, waiting for a permit or for the service
	LimitAt5s int           // the limit 5 s into the phase, -1 without a limiter
	// Follow is how long into the phase the limit first came within 25% of
	// the capacity, looked at every 10 ms; -1 if it never did, or without a
	// limiter.
	Follow time.Duration
}

type stats struct {
	Result
	lat  []int32 // µs of each admitted call, to its answer or its deadline
	shed []int32 // µs of each refusal
}

// Run sends the phases' arrivals through lim (nil: no limiter) to the service
// and returns what each phase saw, by the phase the call arrived in. The
// arrivals and service times come from seed alone.
func Run(lim Limiter, phases []Phase, seed uint64) []Result {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	svc := &service{capacity: phases[0].Capacity}
	st := make([]stats, len(phases))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i, ph := range phases {
		st[i].Phase, st[i].Capacity, st[i].LimitAt5s, st[i].Follow = ph.Name, ph.Capacity, -1, -1
		svc.setCapacity(ph.Capacity)
		perTick := ph.Rate / 1000
		ticks := int(ph.Duration / time.Millisecond)
		for tick := range ticks {
			if tick == 5000 && lim != nil {
				st[i].LimitAt5s = lim.Limit()
			}
			if tick%10 == 0 && lim != nil && st[i].Follow < 0 {
				if l := lim.Limit(); 4*l >= 3*ph.Capacity && 4*l <= 5*ph.Capacity {
					st[i].Follow = time.Duration(tick) * time.Millisecond
				}
			}
			for range poisson(rng, perTick) {
				d := time.Duration(float64(Median) * math.Exp(Sigma*rng.NormFloat64()))
				s := &st[i]
				wg.Go(func() { client(lim, svc, d, s, &mu) })
			}
			time.Sleep(time.Millisecond)
		}
	}
	wg.Wait()
	svc.stop()
	out := make([]Result, len(st))
	for i := range st {
		s := &st[i]
		slices.Sort(s.lat)
		if n := len(s.lat); n > 0 {
			s.P99 = time.Duration(s.lat[min(n-1, n*99/100)]) * time.Microsecond
		}
		slices.Sort(s.shed)
		if n := len(s.shed); n > 0 {
			s.ShedP99 = time.Duration(s.shed[min(n-1, n*99/100)]) * time.Microsecond
		}
		s.Goodput = float64(s.Good) / phases[i].Duration.Seconds()
		out[i] = s.Result
	}
	return out
}

func client(lim Limiter, svc *service, d time.Duration, s *stats, mu *sync.Mutex) {
	ctx, cancel := context.WithTimeout(context.Background(), Deadline)
	defer cancel()
	t0 := time.Now()
	var p Permit
	if lim != nil {
		var err error
		if p, err = lim.Acquire(ctx); err != nil {
			el := time.Since(t0)
			mu.Lock()
			defer mu.Unlock()
			s.Arrivals++
			if ctx.Err() != nil {
				s.Timeouts++ // its deadline passed as it waited
				return
			}
			s.Shed++
			s.ShedMax = max(s.ShedMax, el)
			s.shed = append(s.shed, int32(min(el, time.Hour)/time.Microsecond))
			return
		}
	}
	err := svc.call(ctx, d)
	el := time.Since(t0)
	if p != nil {
		p.Done(err)
	}
	mu.Lock()
	defer mu.Unlock()
	s.Arrivals++
	s.Admitted++
	if err == nil {
		s.Good++
	} else {
		s.Timeouts++
		el = Deadline
	}
	s.lat = append(s.lat, int32(min(el, time.Hour)/time.Microsecond))
}

// poisson draws from a Poisson distribution of mean lambda (Knuth's method,
// in pieces of at most 20 so that e^-λ stays far from underflow).
func poisson(rng *rand.Rand, lambda float64) int {
	n := 0
	for lambda > 0 {
		part := min(lambda, 20)
		lambda -= part
		l, p := math.Exp(-part), 1.0
		for {
			p *= rng.Float64()
			if p <= l {
				break
			}
			n++
		}
	}
	return n
}

// service runs at most capacity calls at once and queues the others, first in
// first out, without bound.
type service struct {
	mu       sync.Mutex
	capacity int
	busy     int
	queue    []*job
	head     int
	stopped  bool
}

type job struct {
	d    time.Duration
	done chan struct{}
}

func (s *service) call(ctx context.Context, d time.Duration) error {
	j := &job{d: d, done: make(chan struct{})}
	s.mu.Lock()
	s.queue = append(s.queue, j)
	s.fillLocked()
	s.mu.Unlock()
	select {
	case <-j.done:
		return nil
	case <-ctx.Done():
		select {
		case <-j.done:
			return nil // answered as the deadline came
		default:
			return ctx.Err()
		}
	}
}

func (s *service) fillLocked() {
	for !s.stopped && s.busy < s.capacity && s.head < len(s.queue) {
		j := s.queue[s.head]
		s.queue[s.head] = nil
		s.head++
		s.busy++
		time.AfterFunc(j.d, func() {
			close(j.done)
			s.mu.Lock()
			s.busy--
			s.fillLocked()
			s.mu.Unlock()
		})
	}
	if s.head > 1024 && s.head*2 > len(s.queue) {
		s.queue = append(s.queue[:0], s.queue[s.head:]...)
		s.head = 0
	}
}

func (s *service) setCapacity(c int) {
	s.mu.Lock()
	s.capacity = c
	s.fillLocked()
	s.mu.Unlock()
}

// stop drops the calls still queued: their clients have all given up.
func (s *service) stop() {
	s.mu.Lock()
	s.stopped = true
	s.queue, s.head = nil, 0
	s.mu.Unlock()
}
