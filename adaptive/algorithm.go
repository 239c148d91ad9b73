package adaptive

import "math"

// The window over which the algorithms judge the service: long enough that
// its mean latency is not noise (a lognormal service time of spread 0.6 has a
// standard deviation of two thirds of its mean: 20 samples leave 15% of
// noise, 800 leave 2%), short enough to follow a change in a second.
const (
	windowMin     = int64(100e6) // ns
	windowSamples = 20
	windowMax     = int64(1e9) // a window closes after this with any sample at all
	maxMask       = 255        // at least one call in 256 is timed

	// The baseline is the lowest window mean of the last baselineBuckets
	// seconds: a minimum, so that it is the latency of the service when
	// nothing queues, and over seconds, so that it rises when the service
	// itself becomes slower, once that has lasted baselineBuckets seconds.
	bucketNs        = int64(1e9)
	baselineBuckets = 10
)

// estimator is the state of the algorithms: the window being filled, the
// baseline, and the limit. It is guarded by the Limiter's lock, and never
// calls out.
type estimator struct {
	alg    Algorithm
	lo, hi float64
	limit  float64

	wStart       int64 // ns of the window's first sample
	wN, wDrops   int   // successes and overload failures in the window
	wSum, wSumSq float64
	wMaxInflight int64

	// epoch counts the changes of the limit. A call started in an earlier
	// epoch ran under another limit: its latency says nothing of this one,
	// and taking it would blur the windows after each change, which then
	// drag the baseline up (each window after a decrease would still hold
	// the queueing of the higher limit).
	epoch uint32

	// A call is timed only if the count of admissions is 0 modulo mask+1:
	// a clock read costs more than the rest of Acquire and Done together,
	// and a window needs hundreds of latencies, not millions. mask+1 is a
	// power of two, set at each window's end so that the next holds 512 to
	// 1024 timed calls at the rate of this one (see close).
	mask uint64

	recent   float64 // mean latency of the last window with successes, ns; 0 before
	baseline float64 // ns; 0 before a first window

	ring    [baselineBuckets]float64 // lowest window mean in each second, 0 for none
	ringSec int64                    // the second of the newest bucket
	ringSet bool
}

func (e *estimator) init(alg Algorithm, lo, hi, init int) {
	if alg == Default {
		alg = Gradient2
	}
	*e = estimator{alg: alg, lo: float64(lo), hi: float64(hi), limit: float64(init)}
}

// seen notes a timed call as it ends, inflight being the calls in flight with
// it when it was handed its slot: whether the service was kept busy in the
// window decides whether a latency that stays low says the limit could be
// higher (it does not when the callers never came near it). The timed calls
// are a sample of all, hundreds a window, and their largest count is near
// enough the largest of all.
func (e *estimator) seen(inflight int64) {
	if inflight > e.wMaxInflight {
		e.wMaxInflight = inflight
	}
}

// sample records a call that ended at now (ns) after rtt ns, dropped if it
// failed from overload, and reports whether the limit may have changed.
func (e *estimator) sample(now, rtt int64, dropped bool, epoch uint32) bool {
	if !dropped && epoch != e.epoch {
		return false
	}
	if e.wN+e.wDrops == 0 || now < e.wStart {
		// A first sample, or a clock that went back (a Limiter used in a
		// testing/synctest bubble after outside it, whose clock is years
		// earlier): start the window afresh.
		if now < e.wStart {
			e.ringSet = false
			e.ring = [baselineBuckets]float64{}
		}
		e.wStart = now
		e.wN, e.wDrops, e.wSum, e.wSumSq = 0, 0, 0, 0
	}
	if dropped {
		e.wDrops++
	} else {
		x := float64(max(rtt, 1)) // a latency of 0 would make the gradient infinite
		e.wN++
		e.wSum += x
		e.wSumSq += x * x
	}
	n, age := e.wN+e.wDrops, now-e.wStart
	if !(n >= windowSamples && age >= windowMin || age >= windowMax) {
		return false
	}
	e.close(now)
	return true
}

// close ends the window at now and moves the limit.
func (e *estimator) close(now int64) {
	n, drops := e.wN+e.wDrops, e.wDrops
	// A limit that the callers did not come near is not shown to be too low
	// by a low latency: it grows only while they fill three quarters of it.
	busy := 4*float64(e.wMaxInflight) >= 3*math.Floor(e.limit) // the limit enforced
	mean, seRel := 0.0, 0.0
	if e.wN > 0 {
		mean = e.wSum / float64(e.wN)
		if variance := e.wSumSq/float64(e.wN) - mean*mean; variance > 0 {
			seRel = math.Sqrt(variance/float64(e.wN)) / mean
		}
		e.recent = mean
		if e.wN >= windowSamples || e.baseline == 0 {
			e.noteBaseline(now, mean)
		}
	}
	e.wN, e.wDrops, e.wSum, e.wSumSq, e.wMaxInflight = 0, 0, 0, 0, 0
	// The window saw about n·(mask+1) calls. Time one in the largest power
	// of two that leaves 512 of them or more in a window as long (at
	// 10,000 calls a second and fewer, all are timed, and the window mean
	// is within 3% of the truth; at 50 million, uncontended, one in 256).
	// A window that closed after windowMax with few calls sets it back to
	// 0 at once: when the calls thin out the windows must fill again.
	calls := uint64(n) * (e.mask + 1)
	e.mask = 0
	for e.mask < maxMask && calls >= 2*512*(e.mask+1) {
		e.mask = e.mask<<1 | 1
	}

	// More than 1% of calls failing from overload is overload, whatever
	// the latency says: a service that fails fast looks fast.
	overloaded := drops > 0 && 100*drops >= n
	base, l := e.baseline, e.limit
	// Only failures, or no baseline yet: no latency to judge by, and the
	// ratios below must not be 0/0 (a NaN limit converts to the smallest
	// int: FuzzAlgorithms found it).
	if mean == 0 {
		mean = base
	}
	if base == 0 {
		base = mean
	}
	if mean == 0 {
		mean, base = 1, 1
	}
	switch e.alg {
	case AIMD:
		if overloaded || mean > 1.5*base {
			l *= 0.9
		} else if busy {
			// About one more per round trip: the window saw wN/l of them.
			l += math.Min(l, math.Max(1, float64(e.wN)/l))
		}
	case Vegas:
		queue := l * (1 - base/mean)
		lg := math.Log10(math.Max(l, 1))
		alpha, beta := math.Max(3, 3*lg), math.Max(6, 6*lg)
		switch {
		case overloaded:
			l *= 0.9
		case queue > beta:
			// Down by the whole queue, to the capacity, rather than
			// by a step: a limit left above the capacity keeps a
			// queue in every window, and the baseline, which needs a
			// window without one, would drift up (see Gradient2).
			l -= math.Max(1, queue)
		case busy:
			// Up by the room under alpha, and by one between alpha
			// and beta, so as never to hold a queue for good.
			l += math.Max(1, alpha-queue)
		}
	default: // Gradient2
		// A window mean is noisy: allow three standard errors above
		// the baseline, and 10% more, before calling it queueing.
		tol := 0.1 + 3*seRel
		switch {
		case overloaded:
			l *= math.Max(0.5, math.Min(0.9, base/mean))
		case mean > base*(1+tol):
			// With more calls let in than the service holds, the
			// latency grows as limit/capacity: scaling by the inverse
			// sets the limit to the capacity. At most halve it in one
			// window, as a single window may be an outlier.
			l *= math.Max(0.5, base/mean)
		case busy && mean <= base*(1+tol/2):
			l += math.Sqrt(l)
		case busy:
			// Near the knee it creeps up by one. It must not hold
			// still there: the windows would all show the small queue
			// it keeps, and once the last clean one left the ten
			// seconds of the baseline, the baseline would rise to the
			// queued latency and the limit with it (the drift of
			// failsafe-go#127). Creeping, it soon crosses the
			// tolerance, and the decrease above sets it to the
			// capacity, whose windows show the clean latency again.
			l++
		}
	}
	l = math.Min(e.hi, math.Max(e.lo, l))
	if math.Floor(l) != math.Floor(e.limit) {
		e.epoch++
	}
	e.limit = l
}

// noteBaseline folds a window mean into the ring of per-second minima and
// recomputes the baseline.
func (e *estimator) noteBaseline(now int64, mean float64) {
	sec := now / bucketNs
	if now < 0 && now%bucketNs != 0 {
		sec-- // floor: the clock reads below zero in a synctest bubble
	}
	switch {
	case !e.ringSet || sec < e.ringSec:
		e.ring = [baselineBuckets]float64{}
		e.ringSec, e.ringSet = sec, true
	case sec > e.ringSec:
		for k := int64(0); k < min(sec-e.ringSec, baselineBuckets); k++ {
			e.ring[bucket(e.ringSec+1+k)] = 0
		}
		e.ringSec = sec
	}
	if i := bucket(sec); e.ring[i] == 0 || mean < e.ring[i] {
		e.ring[i] = mean
	}
	b := 0.0
	for _, v := range e.ring {
		if v != 0 && (b == 0 || v < b) {
			b = v
		}
	}
	e.baseline = b
}

// bucket returns the ring index of second sec, which may be negative.
func bucket(sec int64) int { return int((sec%baselineBuckets + baselineBuckets) % baselineBuckets) }
