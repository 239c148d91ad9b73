package ctxsyncotel

import (
	"errors"
	"slices"
	"sync"
	"weak"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/embedded"
)

// The registrations of the Observe functions under one series (one
// MeterProvider, one attribute set, one function) are kept in the series'
// counters, and the series is reported by one callback: that of a
// registration, its carrier, which reads the source of the newest
// registration in force, and reports nothing while none is. Each
// registration registers a callback of its own, so that each Observe fails
// alike when the Meter refuses it, whether or not another is in force; but
// only the carrier's reports.
//
// Two registrations' callbacks reporting the series in one collection would
// be added up by the SDK (a semaphore of 4 permits would show 8 free), and
// none would leave a gap in the export. Which source the carrier reads
// changes under the counters' lock, in one step: an Observe's hand-over,
// and the hand-back at an Unregister, come whole, and a collection reads
// the source from before the change or the one from after it, once.
// The carrier itself cannot change so while a registration is in force: the
// SDK runs a collection's callbacks one after the other, and no callback
// can tell whether the one that reported before it ran in the same
// collection, or whether the one it would take over from is still to run.
// So the carrier stays the same while any registration is in force, its
// registration with the Meter kept past the end of its own, and is
// unregistered with the last (see settleLocked). It changes only when none
// is: an Observe that finds no carrier, or one being unregistered, makes
// its own callback the carrier before it registers it (see arrive). The
// SDK registers a callback, and unregisters one, between two collections,
// never during one: the carrier's new callback runs in no collection in
// which the old one reported.
//
// The invariants, under the counters' lock: at most one carrier; while a
// registration is in force (in live), the carrier's callback is registered
// and not being unregistered; while the carrier's callback is not yet
// registered (carrierReg nil, its Observe under way), live is empty: the
// first Observe to join then makes its own callback, registered already and
// never run with a registration in force, the carrier (see join).

// A reader reads the source of a registration and reports it with insts, the
// instruments of the callback that runs it: the carrier's.
type reader func(o metric.Observer, insts any)

// seriesTables are the counters of the series of the Observe functions that
// report no counter, one table per function: the instruments of two
// functions differ, and so do the readers of their sources.
type seriesTables struct {
	mu sync.Mutex
	m  map[string]*seriesCounters // by the name of what is observed; guarded by mu
}

// of returns the table of what.
func (t *seriesTables) of(what string) *seriesCounters {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m == nil {
		t.m = map[string]*seriesCounters{}
	}
	s := t.m[what]
	if s == nil {
		s = &seriesCounters{transient: true}
		t.m[what] = s
	}
	return s
}

// gaugeSeries are the series of the Observe functions that report no
// counter (their counters, none, left unused).
var gaugeSeries seriesTables

// arrive begins a registration under c's series: it numbers it, counts it
// under way, and makes its callback, to be registered, the carrier if there
// is none, or the one there is is being unregistered (no registration is in
// force then). The one being unregistered reports nothing more.
func (c *counters) arrive() (token uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	token = tokens.Add(1)
	c.pending++
	if c.carrier == 0 || c.retiring {
		c.carrier, c.carrierReg, c.retiring = token, nil, false
	}
	return token
}

// join ends the Observe of the registration numbered token, whose callback
// is registered as reg: its source, read by read, is the series' now. If it
// is the carrier, reg is the carrier's registration; if the carrier's is not
// registered yet, no registration is in force, and its own callback, which
// never reported, becomes the carrier. So it does if the carrier is being
// unregistered: an Observe that arrived under a series merged into this
// one since (see seriesCounters.mergeLocked) joins a series it did not
// arrive under, whose carrier may have retired meanwhile, and which the
// retire would leave with no carrier. A source other than the one read
// before adds its counts to those counted (see observing); the same source
// observed again carries on.
func (c *counters) join(token uint64, src any, read reader, reg metric.Registration) {
	id := sourceOf(src)
	c = c.lock()
	defer c.mu.Unlock()
	c.pending--
	if c.carrier == token || c.carrierReg == nil || c.retiring {
		c.carrier, c.carrierReg, c.retiring = token, reg, false
	}
	if i := c.liveOf(c.cur); i >= 0 {
		c.live[i].last = slices.Clone(c.last)
	}
	c.cur = token
	c.live = append(c.live, liveRegistration{token: token, joined: joins.Add(1), src: id, read: read, reg: reg})
	if id != (weak.Pointer[byte]{}) && id != c.src {
		c.switchTo(id)
	}
}

// abandon ends the Observe of the registration numbered token, which failed:
// the Meter refused an instrument or the callback, or panicked. Its
// callback, if it was the carrier, never reported: it had no registration
// with the Meter, so none was in force. It returns the error of
// unregistering the carrier, if no registration is left (see settleLocked).
func (c *counters) abandon(token uint64) (err error) {
	defer c.forget()
	c = c.lock()
	c.pending--
	if c.carrier == token {
		c.carrier = 0
	}
	reg, carrier := c.settleLocked()
	orphans := c.orphans
	c.orphans = nil
	c.mu.Unlock()
	// Each in a deferred call of its own, as at an Unregister. One the
	// Meter refuses goes back to the series, for the next Unregister or
	// failed Observe under it to try again.
	for _, o := range orphans {
		defer func() {
			if e := o.Unregister(); e != nil {
				err = errors.Join(err, e)
				t := c.lock()
				t.orphans = append(t.orphans, o)
				t.mu.Unlock()
			}
		}()
	}
	return c.retire(reg, carrier)
}

// idleLocked reports whether no registration is in force or under way under
// c's series, and no callback reports it: c holds nothing a gauge's series
// needs. c.mu must be held.
func (c *counters) idleLocked() bool {
	return len(c.live) == 0 && c.pending == 0 && c.carrier == 0
}

// forget takes c out of its table, if the table drops the series of the
// Observe functions of gauges once idle, and c is. A later Observe under
// the series makes new counters: nothing is lost, there being no count to
// carry on. Called with c.mu not held.
func (c *counters) forget() {
	if t := c.target(); t.table != nil {
		t.table.drop(t)
	}
}

// end takes the registration numbered token out of the series, at its
// Unregister, and reports whether it was in force. If it was the one
// counted, the newest one left in force is counted again, from the counts
// its source had when it was taken over: what the registrations after it
// counted stays in the base, and the counter neither falls nor climbs.
// (Taking its source for a new one would add its counts a second time.) A
// source that is not a pointer cannot be told from the one counted, and
// carries on from its counts, as at an Observe.
//
// It returns own, the registration with the Meter to unregister, unless its
// callback is the carrier, which reports the series for the registrations
// left; and the carrier's, if none is left (see settleLocked).
func (c *counters) end(token uint64) (own, carrierReg metric.Registration, carrier uint64, orphans []metric.Registration, ok bool) {
	c = c.lock()
	defer c.mu.Unlock()
	orphans, c.orphans = c.orphans, nil
	i := c.liveOf(token)
	if i < 0 {
		return nil, nil, 0, orphans, false
	}
	own = c.live[i].reg
	c.live = slices.Delete(c.live, i, i+1)
	if c.cur == token && len(c.live) > 0 {
		c.resumeNewestLocked()
	}
	if token == c.carrier {
		own = nil
	}
	carrierReg, carrier = c.settleLocked()
	return own, carrierReg, carrier, orphans, true
}

// settleLocked returns the carrier's registration with the Meter, and its
// number, if no registration is in force or under way, the carrier's
// callback having nothing more to report; the carrier is then being
// unregistered, until retire. While an Observe is under way, the carrier is
// kept for it: it reports the new registration once it joins, and no
// callback has to take over. c.mu must be held.
func (c *counters) settleLocked() (metric.Registration, uint64) {
	if len(c.live) > 0 || c.pending > 0 || c.carrierReg == nil || c.retiring {
		return nil, 0
	}
	c.retiring = true
	return c.carrierReg, c.carrier
}

// retire unregisters reg, the registration of the carrier numbered carrier
// that settleLocked returned, if any, and returns its error. Once it
// returns, or panics, the series has no carrier, unless an Observe made
// another meanwhile.
func (c *counters) retire(reg metric.Registration, carrier uint64) error {
	if reg == nil {
		return nil
	}
	defer func() {
		t := c.lock()
		if t.carrier == carrier && t.retiring {
			t.carrier, t.carrierReg, t.retiring = 0, nil, false
		}
		t.mu.Unlock()
		t.forget()
	}()
	return reg.Unregister()
}

// report is the callback of the registration numbered token: if it is the
// carrier, it reads the source of the newest registration in force, and
// reports it with insts, its own instruments. The source is read, and the
// SDK's observer called, with no lock held: a source of the user's own may
// block, or call back into the package. A registration that ends meanwhile
// is still read this once, by this collection alone.
func (c *counters) report(token uint64, o metric.Observer, insts any) {
	c = c.lock()
	if c.carrier != token || len(c.live) == 0 {
		c.mu.Unlock()
		return
	}
	read := c.live[len(c.live)-1].read
	c.mu.Unlock()
	read(o, insts)
}

// A seriesRegistration is the registration an Observe function returns.
type seriesRegistration struct {
	embedded.Registration
	counts *counters
	token  uint64

	mu sync.Mutex
	// left are the callbacks' registrations with the Meter whose
	// Unregister, at an Unregister of this one, failed, panicked or called
	// runtime.Goexit: the next Unregister tries them again. Their callbacks
	// report nothing meanwhile: none is the carrier of a registration in
	// force. Guarded by mu.
	left []metric.Registration
}

// Unregister takes the registration out of its series: the newest
// registration left in force reports it from the next collection on, or
// none does. It unregisters its callback from the Meter, unless that
// callback reports the series for the registrations left, and the callback
// that reported the series, if no registration is left; it returns their
// error. A later Unregister tries again those of the two whose Unregister
// with the Meter failed (or panicked, or called runtime.Goexit), and does
// nothing more.
func (r *seriesRegistration) Unregister() (err error) {
	own, carrierReg, carrier, orphans, ok := r.counts.end(r.token)
	r.mu.Lock()
	again := append(r.left, orphans...)
	r.left = nil
	r.mu.Unlock()
	// Each in a deferred call of its own, which runs even if one before it
	// panics or calls runtime.Goexit: the carrier's last, once this one's
	// own is out of the Meter, as at any Unregister.
	if ok {
		defer func() {
			err = errors.Join(err, r.try(carrierReg, func() error { return r.counts.retire(carrierReg, carrier) }))
		}()
		if own != nil {
			defer func() { err = errors.Join(err, r.try(own, own.Unregister)) }()
		}
	}
	for i := len(again) - 1; i >= 0; i-- {
		defer func() { err = errors.Join(err, r.try(again[i], again[i].Unregister)) }()
	}
	return nil
}

// try unregisters reg from the Meter with unregister, and keeps it in r.left
// for the next Unregister unless unregister returns nil. A nil reg is
// nothing to unregister.
func (r *seriesRegistration) try(reg metric.Registration, unregister func() error) error {
	if reg == nil {
		return nil
	}
	done := false
	defer func() {
		if !done {
			r.mu.Lock()
			r.left = append(r.left, reg)
			r.mu.Unlock()
		}
	}()
	err := unregister()
	done = err == nil
	return err
}
