package ctxsyncotel

import (
	"sync"
	"sync/atomic"
	"weak"

	"github.com/ctxsync/ctxsync/breaker"
)

// callTotals keep ctxsync.breaker.calls of one name monotonic, as an
// OpenTelemetry counter must be. What Observe reads, a breaker's
// Metrics().Total, is zeroed by Breaker.Reset, and a new breaker observed
// under the name starts again from its own counts; reported as read, the
// counter would fall. A back end tells a restart of a cumulative counter by
// a new start time, which an observable instrument cannot give, and a
// delta reader would get a negative delta. So each count carries on from
// where it was: a fall is taken for a Reset, and what was read before it
// is added to a base. The calls a breaker counted between the last
// collection and its Reset are lost to the counter; none is counted twice.
type callTotals struct {
	seq atomic.Uint64 // numbers the reads of the breakers' Metrics

	mu      sync.Mutex
	src     weak.Pointer[breaker.Breaker] // the breaker read last, if a *breaker.Breaker
	applied uint64                        // the seq of the read last applied
	last    [breaker.Rejected + 1]int64   // the Total read last, by outcome
	base    [breaker.Rejected + 1]int64   // counted before the last Reset, and by earlier breakers
}

// callTotals returns the totals of name, made at its first Observe.
func (m *BreakerMetrics) callTotals(name string) *callTotals {
	m.totalsMu.Lock()
	defer m.totalsMu.Unlock()
	if m.totals == nil {
		m.totals = map[string]*callTotals{}
	}
	t := m.totals[name]
	if t == nil {
		t = &callTotals{}
		m.totals[name] = t
	}
	return t
}

// observing tells t that b is now read under its name. A breaker other
// than the one read before adds its counts to those counted: its own
// start from 0 and are no Reset of the other's. The same breaker observed
// again, after Unregister, carries on. The breaker read before is known by
// a weak pointer, so that metrics unregistered do not keep it alive; a
// source of another type than *breaker.Breaker is taken for a new breaker
// at each Observe.
func (t *callTotals) observing(b BreakerSource) {
	bb, _ := b.(*breaker.Breaker)
	t.mu.Lock()
	defer t.mu.Unlock()
	if bb != nil && t.src.Value() == bb {
		return
	}
	if bb != nil {
		t.src = weak.Make(bb)
	} else {
		t.src = weak.Pointer[breaker.Breaker]{}
	}
	for i := range t.last {
		t.base[i] += t.last[i]
		t.last[i] = 0
	}
}

// start numbers a read of the breaker's Metrics: take it before the read.
func (t *callTotals) start() uint64 { return t.seq.Add(1) }

// counts returns the counter's values, by outcome, after the read numbered
// seq gave total. Two collections (of two readers) may read the breaker in
// one order and get here in the other: a read older than one applied
// already is not applied, lest its smaller counts pass for a Reset; it
// reports the newer values instead.
func (t *callTotals) counts(seq uint64, total breaker.Counts) [breaker.Rejected + 1]int64 {
	var read [breaker.Rejected + 1]int64
	read[breaker.Success] = total.Successes
	read[breaker.Failure] = total.Failures
	read[breaker.Ignored] = total.Ignored
	read[breaker.Rejected] = total.Rejected
	t.mu.Lock()
	defer t.mu.Unlock()
	if seq > t.applied {
		t.applied = seq
		for i, v := range read {
			if v < t.last[i] { // reset since the last read
				t.base[i] += t.last[i]
			}
			t.last[i] = v
		}
	}
	var out [breaker.Rejected + 1]int64
	for i := range out {
		out[i] = t.base[i] + t.last[i]
	}
	return out
}
