package adaptive

import (
	"errors"
	"fmt"
	"time"
)

// An Algorithm is the rule a Limiter moves its limit by. Each one looks at the
// calls that ended in a window of at least 100 ms and 20 calls: their mean
// latency against the baseline (the latency of the service when nothing
// queues, see Limiter.Latency), and the share of them that failed from
// overload (Ticket.Done with an error).
type Algorithm int

const (
	// Default is the zero Algorithm: Gradient2, chosen by measurement. In the
	// simulation of issue 42 (bench/cmd/adaptivesim: a service of 100 slots
	// under three times its capacity, then cut to 50, then back), it kept
	// goodput at 98-99% of capacity and the 99th percentile of admitted
	// calls near 52 ms, came within 25% of the cut capacity in 170 ms and
	// of the restored one in 340 ms. AIMD's limit settled up to twice the
	// capacity (99th percentile up to 83 ms, and it never came within 25%
	// of the cut); Vegas kept 96-99% of capacity, but took 1 s to follow
	// the capacity back, and 2.7 s to reach it from its initial limit.
	Default Algorithm = iota

	// AIMD adds to the limit about one call per round trip while calls
	// succeed and are not slow, and takes a tenth off when calls fail from
	// overload or take more than 1.5 times the baseline. It needs no
	// accurate baseline (its limit settles up to 1.5 times the capacity, and
	// its baseline follows the latency of that small queue), and suits a
	// service that says when it is overloaded.
	AIMD

	// Vegas estimates how many calls queue in the service, limit × (1 -
	// baseline/latency), and moves the limit a few calls at a time to keep
	// that between alpha = max(3, 3·log10(limit)) and beta = max(6,
	// 6·log10(limit)). The floors keep it moving at small limits, where the
	// logarithms are 0 (the older Go port's limit stuck at 1:
	// go-concurrency-limits#117).
	Vegas

	// Gradient2 scales the limit by the gradient baseline/latency when the
	// service queues, which sets it to the service's capacity in one window,
	// and adds √limit when it does not. Its baseline is the lowest window
	// mean of the last ten seconds rather than a long-term average of all
	// latencies, which follows the latency up under a sustained overload
	// and stops the limit from falling (failsafe-go#127).
	Gradient2

	numAlgorithms
)

// String returns the Algorithm's name: "AIMD", "Vegas", "Gradient2", or
// "Default".
func (a Algorithm) String() string {
	switch a {
	case Default:
		return "Default"
	case AIMD:
		return "AIMD"
	case Vegas:
		return "Vegas"
	case Gradient2:
		return "Gradient2"
	}
	return fmt.Sprintf("Algorithm(%d)", int(a))
}

// NoWait as a Config.MaxWait sheds every call that finds the limit reached,
// without queueing it.
const NoWait time.Duration = -1

// Defaults of Config's zero fields.
const (
	DefaultInitialLimit = 20
	DefaultMaxLimit     = 1000

	// MaxLimit is the largest limit a Config may set: far beyond any
	// concurrency a process holds, and small enough that the limit's
	// arithmetic in float64 stays exact.
	MaxLimit = 1 << 40
)

// Config tunes a Limiter. The zero Config is valid: Gradient2, limits from 1
// to 1000 starting at 20, and waits of at most twice the baseline latency.
type Config struct {
	// Algorithm moves the limit; the zero value is Default.
	Algorithm Algorithm

	// InitialLimit is the limit before anything is measured; 0 means 20, or
	// MinLimit if that is larger.
	InitialLimit int

	// MinLimit is the lowest the limit goes; 0 means 1.
	MinLimit int

	// MaxLimit is the highest the limit goes; 0 means 1000, or MinLimit if
	// that is larger. At most the constant MaxLimit.
	MaxLimit int

	// MaxWait is the longest a call waits for a slot past the limit before
	// it is shed with ErrShed. A call is shed at once, without queueing,
	// when the wait it would likely face (the calls that must end before
	// its turn, over the rate at which calls end) is longer than half of
	// MaxWait: an estimate, which the timer of MaxWait backs. 0 means
	// twice the baseline latency (see Limiter.Latency), or 1 s while none is
	// measured yet; NoWait sheds every call that finds the limit reached.
	// Durations of 100 years and more wait as long as the caller's ctx
	// allows.
	MaxWait time.Duration

	// Clock, if set, returns the time, as a duration from any fixed instant,
	// at which a Ticket starts and ends: the latencies the limit follows.
	// It lets a test drive the algorithms without waiting. It is read when
	// a timed Ticket is handed out and when it is finished, outside the
	// Limiter's lock, and should never go back. (Not every Ticket is timed:
	// at more than 10,000 calls a second, one in 2, 4, up to 256 is, enough
	// to leave 512 or more in each window, since a clock read costs more
	// than the rest of a call's Acquire and Done. A Ticket's latency counts
	// from the reading at its Acquire to the one at its Done; one that ends
	// before it starts, or over an hour after, is not taken.) The default
	// reads the monotonic clock, which inside a testing/synctest bubble is
	// the bubble's. The MaxWait timers run on the real (or the bubble's)
	// clock either way.
	Clock func() time.Duration
}

// Validate reports what is wrong with cfg, if anything, as an error whose
// message begins with "adaptive:". New panics with the same complaint; a
// program that reads a Config from outside (a file, flags) calls Validate
// first.
func (cfg Config) Validate() error {
	switch {
	case cfg.Algorithm < 0 || cfg.Algorithm >= numAlgorithms:
		return fmt.Errorf("adaptive: Config with unknown Algorithm %d", int(cfg.Algorithm))
	case cfg.MinLimit < 0:
		return fmt.Errorf("adaptive: Config with negative MinLimit %d", cfg.MinLimit)
	case cfg.MaxLimit < 0:
		return fmt.Errorf("adaptive: Config with negative MaxLimit %d", cfg.MaxLimit)
	case cfg.InitialLimit < 0:
		return fmt.Errorf("adaptive: Config with negative InitialLimit %d", cfg.InitialLimit)
	case cfg.MinLimit > MaxLimit || cfg.MaxLimit > MaxLimit || cfg.InitialLimit > MaxLimit:
		return errors.New("adaptive: Config with a limit above MaxLimit")
	case cfg.MaxWait < NoWait:
		return fmt.Errorf("adaptive: Config with negative MaxWait %v; use NoWait to queue nothing", cfg.MaxWait)
	}
	lo, hi, init := cfg.limits()
	switch {
	case cfg.MaxLimit != 0 && hi < lo:
		return fmt.Errorf("adaptive: Config with MaxLimit %d below MinLimit %d", hi, lo)
	case cfg.InitialLimit != 0 && (init < lo || init > hi):
		return fmt.Errorf("adaptive: Config with InitialLimit %d outside MinLimit %d to MaxLimit %d", init, lo, hi)
	}
	return nil
}

// limits returns the min, max and initial limits, defaults applied.
func (cfg Config) limits() (lo, hi, init int) {
	lo = max(1, cfg.MinLimit)
	hi = cfg.MaxLimit
	if hi == 0 {
		hi = max(DefaultMaxLimit, lo)
	}
	init = cfg.InitialLimit
	if init == 0 {
		init = min(max(DefaultInitialLimit, lo), hi)
	}
	return lo, hi, init
}
