package ctxsyncprom

import (
	"time"

	"github.com/ctxsync/ctxsync/ratelimit"
)

// A Tally is what AddTally reads: *ratelimit.Tally is one.
type Tally interface {
	Counts() ratelimit.TallyCounts
}

// AddTally adds t, which counts the decisions of the limiters it wraps,
// under name: each scrape reads t.Counts(). For the histogram of the waits,
// set t.OnWait to TallyOnWait(name) before its first use.
//
// AddTally returns an error wrapping ErrDuplicateName if a tally was added
// under name already. It panics if t is nil or name is empty.
func (c *Collector) AddTally(name string, t Tally) error {
	c.mustBeMade()
	checkName("AddTally", name)
	checkSource("AddTally", t)
	d := &c.d
	return c.add("ratelimit", name, &tallySource{
		t:       t,
		allowed: newSeries(d.limiterDecisions, true, name, "allowed"),
		refused: newSeries(d.limiterDecisions, true, name, "refused"),
		failed:  newSeries(d.limiterWaits, true, name, "failed"),
		taken:   newSeries(d.limiterWaits, true, name, "taken"),
	})
}

type tallySource struct {
	t                               Tally
	allowed, refused, failed, taken series
}

func (s *tallySource) size() int { return 4 }

func (s *tallySource) collect(out []sample) []sample {
	n := s.t.Counts()
	return append(out,
		s.allowed.at(float64(n.Allowed)),
		s.refused.at(float64(n.Refused)),
		s.failed.at(float64(n.WaitFailed)),
		s.taken.at(float64(n.Waited)),
	)
}

// TallyOnWait returns an OnWait for the Tally named name: it feeds
// ratelimit_wait_seconds, the durations of the WaitN calls (and Transport
// requests) through the Tally, by result: taken (the events were taken) or
// failed (WaitN returned an error, at once if the wait could not succeed).
//
// The histogram's series were looked up here, once. Calls with the same name
// share the histogram.
//
// TallyOnWait panics if name is empty.
func (c *Collector) TallyOnWait(name string) func(time.Duration, error) {
	c.mustBeMade()
	checkName("TallyOnWait", name)
	taken := c.limiterWait.WithLabelValues(name, "taken")
	failed := c.limiterWait.WithLabelValues(name, "failed")
	return func(d time.Duration, err error) {
		if err == nil {
			taken.Observe(d.Seconds())
		} else {
			failed.Observe(d.Seconds())
		}
	}
}
