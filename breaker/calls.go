package breaker

import (
	"strconv"
	"time"
)

// A CallEvent tells Settings.OnCall how a call went.
type CallEvent struct {
	// Name is the breaker's Settings.Name (for a Transport's breaker, the
	// Transport's Settings.Name and the host, as OpenError.Name): an
	// OnCall shared by several breakers, or made before the breaker, tells
	// them apart by it.
	Name    string
	Outcome Outcome
	// State is the state the call was let through in, or refused in.
	State State
	// Duration is how long the call took, from the moment it was let
	// through to its end; 0 for a refused call.
	Duration time.Duration
	// Err is the call's error (nil for a success), or for a refused call
	// the *OpenError that Execute or Allow returned.
	Err error
}

// An Outcome is how a call ended, as the breaker counted it.
type Outcome int

// The outcomes, each counted in the Counts field of the same name.
const (
	Success  Outcome = iota + 1 // it succeeded, or its error is not a failure
	Failure                     // IsFailure said its error is a failure, or it panicked
	Ignored                     // IsIgnored said its error says nothing of the dependency
	Rejected                    // the breaker refused it: fn was not called
)

var outcomes = [...]string{Success: "success", Failure: "failure", Ignored: "ignored", Rejected: "rejected"}

// String returns the outcome as a word fit for a metric's label: "success",
// "failure", "ignored" or "rejected".
func (o Outcome) String() string {
	if o > 0 && int(o) < len(outcomes) {
		return outcomes[o]
	}
	return "Outcome(" + strconv.Itoa(int(o)) + ")"
}

// reportRefusal tells OnCall of a call refused with err.
func (b *Breaker) reportRefusal(err error) {
	st := Open
	if e, ok := err.(*OpenError); ok {
		st = e.State
	}
	b.s.OnCall(CallEvent{Name: b.s.Name, Outcome: Rejected, State: st, Err: err})
}
