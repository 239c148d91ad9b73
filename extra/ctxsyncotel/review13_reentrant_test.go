package ctxsyncotel_test

import (
	"context"
	"testing"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"

	"github.com/ctxsync/ctxsync/breaker"
	"github.com/ctxsync/ctxsync/extra/ctxsyncotel"
)

// callingProvider gives Meters whose counters call onAdd, once, at their
// first Add: a MeterProvider of the user's own, whose code may do anything,
// call back into the metrics included.
type callingProvider struct {
	noop.MeterProvider
	onAdd *func()
}

func (p callingProvider) Meter(string, ...metric.MeterOption) metric.Meter {
	return callingMeter{onAdd: p.onAdd}
}

type callingMeter struct {
	noop.Meter
	onAdd *func()
}

func (m callingMeter) Int64Counter(string, ...metric.Int64CounterOption) (metric.Int64Counter, error) {
	return callingCounter{onAdd: m.onAdd}, nil
}

type callingCounter struct {
	noop.Int64Counter
	onAdd *func()
}

func (c callingCounter) Add(context.Context, int64, ...metric.AddOption) {
	if f := *c.onAdd; f != nil {
		*c.onAdd = nil
		f()
	}
}

// Regression: BreakerMetrics made with no name hold the changes of state
// told before they learn a name, and count them when the first name comes,
// with the Meter's Add, the user's code (a MeterProvider of the user's
// own), under the lock that serializes the learning of names. A Meter that
// called back into the metrics, told of another breaker's call there,
// waited for that lock for good. Right: the held changes are counted after
// the lock is released.
func TestReview13FirstNameCountsHeldChangesUnlocked(t *testing.T) {
	var onAdd func()
	m, err := ctxsyncotel.NewBreakerMetrics("", ctxsyncotel.WithMeterProvider(callingProvider{onAdd: &onAdd}))
	if err != nil {
		t.Fatal(err)
	}
	onCall := m.OnCall(nil)
	m.OnStateChange(nil)(breaker.Closed, breaker.Open, breaker.Counts{}) // held: no name yet
	onAdd = func() { onCall(breaker.CallEvent{Name: "other", Outcome: breaker.Success}) }
	done := make(chan struct{})
	go func() {
		defer close(done)
		onCall(breaker.CallEvent{Name: "first", Outcome: breaker.Success}) // learns the first name
	}()
	select {
	case <-done:
	case <-time.After(time.Minute): // a hang, not a timing: it passes at once
		t.Fatal("the Meter's call back into the metrics, made as the first name was learned, never returned")
	}
}
