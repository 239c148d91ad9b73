package ctxsyncotel_test

import (
	"testing"

	"go.opentelemetry.io/otel/attribute"

	"github.com/ctxsync/ctxsync"
	"github.com/ctxsync/ctxsync/extra/ctxsyncotel"
)

// TestMX13AttributesMustBeValid pins a defect of WithAttributes: an
// attribute with an empty key was taken without a word, though
// OpenTelemetry requires a non-empty one (attribute.KeyValue.Valid is
// false for it); the SDK keeps it as it is, and an exporter then sends what
// a back end refuses (the key of a Prometheus label must not be empty). The
// right behaviour: it is an error of the constructor or Observe function
// given it, as an attribute that is not UTF-8 is. (An empty value, of type
// EMPTY, is valid.)
func TestMX13AttributesMustBeValid(t *testing.T) {
	_, opt := newProvider(t)
	for _, kv := range []attribute.KeyValue{
		attribute.String("", "x"),
		attribute.Int("", 1),
		{},
	} {
		bad := ctxsyncotel.WithAttributes(attribute.String("ok", "v"), kv)
		if _, err := ctxsyncotel.NewPoolMetrics("db", opt, bad); err == nil {
			t.Errorf("NewPoolMetrics with the attribute %q=%s: no error", kv.Key, kv.Value.Type())
		}
		if _, err := ctxsyncotel.NewLimiterMetrics("api", opt, bad); err == nil {
			t.Errorf("NewLimiterMetrics with the attribute %q=%s: no error", kv.Key, kv.Value.Type())
		}
		if reg, err := ctxsyncotel.ObserveSemaphore("s", ctxsync.NewSemaphore(1), opt, bad); err == nil {
			_ = reg.Unregister()
			t.Errorf("ObserveSemaphore with the attribute %q=%s: no error", kv.Key, kv.Value.Type())
		}
	}
}
