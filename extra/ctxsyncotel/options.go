package ctxsyncotel

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
)

// ScopeName is the name of the instrumentation scope (the Meter) that every
// instrument of this package belongs to.
const ScopeName = "github.com/ctxsync/ctxsync/extra/ctxsyncotel"

// An Option configures the instruments of a constructor or Observe function.
type Option interface {
	apply(*config)
}

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

// config is what the options say.
type config struct {
	provider    metric.MeterProvider
	providerSet bool // WithMeterProvider was given, maybe with nil
	attrs       []attribute.KeyValue
	buckets     []float64
	bucketsSet  bool
	m           metric.Meter // provider's Meter of ScopeName
}

// WithMeterProvider sets the MeterProvider the instruments are made from. The
// default is the global one, otel.GetMeterProvider(), at the time of the
// constructor's call: instruments made from it before otel.SetMeterProvider
// forward to the provider set later, and the series of the Observe
// functions of the two are one (see ObserveSemaphore). A nil provider is an
// error.
func WithMeterProvider(mp metric.MeterProvider) Option {
	return optionFunc(func(c *config) {
		c.provider = mp
		c.providerSet = true
	})
}

// WithAttributes adds attributes to every measurement: the service's
// deployment, say. The name attribute of each constructor (the pool's name,
// the breaker's...) wins over one of the same key here. An attribute whose
// key is empty, or whose key or a string of whose value is not UTF-8, is an
// error of the constructor or Observe function given it, as such a name is.
func WithAttributes(attrs ...attribute.KeyValue) Option {
	a := append([]attribute.KeyValue(nil), attrs...) // the caller may reuse attrs
	return optionFunc(func(c *config) {
		c.attrs = append(c.attrs, a...)
	})
}

// WithDurationBuckets sets the bucket boundaries, in seconds, of the
// duration histograms (wait, create and call times). They must be finite and
// strictly increasing; none at all leaves the choice to the SDK's default.
// They are advice to the SDK: a View of the MeterProvider overrides them.
//
// The default, DefaultDurationBuckets, spans 100µs to 10s: pool waits and
// calls through a breaker are often far shorter than the SDK's own default
// boundaries (made for milliseconds) can tell apart.
func WithDurationBuckets(bounds ...float64) Option {
	b := append([]float64(nil), bounds...)
	return optionFunc(func(c *config) {
		c.buckets = b
		c.bucketsSet = true
	})
}

// DefaultDurationBuckets returns the bucket boundaries, in seconds, of the
// duration histograms unless WithDurationBuckets says otherwise: 100µs to
// 10s. Each call returns a new slice.
func DefaultDurationBuckets() []float64 {
	return []float64{
		0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
		0.1, 0.25, 0.5, 1, 2.5, 5, 10,
	}
}

// newConfig applies opts, and checks them and name; what is the name of what
// the instruments measure, for errors ("pool", "breaker"...).
func newConfig(what, name string, opts []Option) (*config, error) {
	if name == "" {
		return nil, fmt.Errorf("ctxsyncotel: empty %s name", what)
	}
	if err := checkUTF8(what, name); err != nil {
		return nil, err
	}
	return applyOptions(opts)
}

// checkUTF8 returns an error if name, of a what, is not UTF-8. A name is
// the value of an attribute, which OTLP carries as a protobuf string: one
// that is not UTF-8 fails the encoding of the whole export, every other
// metric of the process with it.
func checkUTF8(what, name string) error {
	if !utf8.ValidString(name) {
		return fmt.Errorf("ctxsyncotel: %s name %q is not UTF-8", what, name)
	}
	return nil
}

// validUTF8 reports whether every string of v, at any depth, is UTF-8.
func validUTF8(v attribute.Value) bool {
	switch v.Type() {
	case attribute.STRING:
		return utf8.ValidString(v.AsString())
	case attribute.STRINGSLICE:
		for _, s := range v.AsStringSlice() {
			if !utf8.ValidString(s) {
				return false
			}
		}
	case attribute.SLICE:
		for _, e := range v.AsSlice() {
			if !validUTF8(e) {
				return false
			}
		}
	case attribute.MAP:
		for _, kv := range v.AsMap() {
			if !utf8.ValidString(string(kv.Key)) || !validUTF8(kv.Value) {
				return false
			}
		}
	}
	return true
}

// applyOptions is newConfig with no name to check: for the pool's and the
// breaker's metrics, whose empty name means the source's own.
func applyOptions(opts []Option) (*config, error) {
	c := &config{}
	for _, o := range opts {
		if o == nil {
			return nil, errors.New("ctxsyncotel: nil Option")
		}
		o.apply(c)
	}
	// Carried beside the name, in the same protobuf strings: one that is
	// not UTF-8 would fail every export as such a name would.
	for _, kv := range c.attrs {
		// An empty key is no attribute (KeyValue.Valid): the SDK keeps
		// it, and a back end refuses it, a Prometheus label above all.
		if !kv.Key.Defined() {
			return nil, fmt.Errorf("ctxsyncotel: WithAttributes: attribute with an empty key (value %s)", kv.Value.String())
		}
		if !utf8.ValidString(string(kv.Key)) || !validUTF8(kv.Value) {
			return nil, fmt.Errorf("ctxsyncotel: WithAttributes: attribute %q=%s is not UTF-8", kv.Key, kv.Value.String())
		}
	}
	if c.providerSet {
		if isNil(c.provider) {
			return nil, errors.New("ctxsyncotel: WithMeterProvider(nil)")
		}
	} else {
		c.provider = otel.GetMeterProvider()
	}
	// Asked for here, once, so that a provider that gives no Meter is an
	// error of the constructor rather than a nil dereference in it.
	c.m = scopeMeter(c.provider)
	if isNil(c.m) {
		return nil, fmt.Errorf("ctxsyncotel: the MeterProvider (%T) gave a nil Meter", c.provider)
	}
	if c.bucketsSet {
		for i, b := range c.buckets {
			if math.IsNaN(b) || math.IsInf(b, 0) {
				return nil, fmt.Errorf("ctxsyncotel: WithDurationBuckets: bound %v is not finite", b)
			}
			if i > 0 && b <= c.buckets[i-1] {
				return nil, fmt.Errorf("ctxsyncotel: WithDurationBuckets: bounds not strictly increasing at %v", b)
			}
		}
	} else {
		c.buckets = DefaultDurationBuckets()
	}
	return c, nil
}

// scopeMeter returns p's Meter of the package's instruments.
func scopeMeter(p metric.MeterProvider) metric.Meter {
	return p.Meter(ScopeName, metric.WithSchemaURL(semconv.SchemaURL))
}

// meter returns the Meter of the instruments.
func (c *config) meter() metric.Meter { return c.m }

// set returns the attribute set of c's attributes and then kvs, which win
// over c's of the same key.
func (c *config) set(kvs ...attribute.KeyValue) attribute.Set {
	all := make([]attribute.KeyValue, 0, len(c.attrs)+len(kvs))
	all = append(all, c.attrs...)
	all = append(all, kvs...)
	return attribute.NewSet(all...) // the last of a key wins
}

// durationHistogram makes a histogram of durations in seconds.
func (c *config) durationHistogram(m metric.Meter, name, desc string) (metric.Float64Histogram, error) {
	opts := []metric.Float64HistogramOption{metric.WithDescription(desc), metric.WithUnit("s")}
	if len(c.buckets) > 0 {
		opts = append(opts, metric.WithExplicitBucketBoundaries(c.buckets...))
	}
	return m.Float64Histogram(name, opts...)
}

// addOpts and recordOpts are the options of one attribute set, made once so
// that a measurement allocates nothing: passing a lone option to a variadic
// interface method would allocate its slice at every call.
func addOpts(s attribute.Set) []metric.AddOption {
	return []metric.AddOption{metric.WithAttributeSet(s)}
}

func recordOpts(s attribute.Set) []metric.RecordOption {
	return []metric.RecordOption{metric.WithAttributeSet(s)}
}

func observeOpts(s attribute.Set) []metric.ObserveOption {
	return []metric.ObserveOption{metric.WithAttributeSet(s)}
}

// isNil reports whether v is nil, or an interface holding a nil pointer (a
// nil *pool.Pool as a PoolStatser, say), whose methods would fail only at
// the first collection, far from the mistake.
func isNil(v any) bool {
	if v == nil {
		return true
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Func, reflect.Chan, reflect.Interface:
		return rv.IsNil()
	}
	return false
}

// nilInstrument returns an error naming the first of insts, a name then an
// instrument in turn, that is nil: a Meter that gives one with no error is
// broken, and the hooks would dereference it at their first event, in the
// pool's or the caller's goroutine, far from the mistake.
func nilInstrument(insts ...any) error {
	for i := 0; i+1 < len(insts); i += 2 {
		if isNil(insts[i+1]) {
			return fmt.Errorf("ctxsyncotel: the Meter gave a nil %s, with no error", insts[i])
		}
	}
	return nil
}

// registered returns reg and err, or an error if the Meter gave a nil
// Registration with no error: its Unregister would dereference nil, in the
// caller's deferred call.
func registered(reg metric.Registration, err error) (metric.Registration, error) {
	if err == nil && isNil(reg) {
		return nil, errors.New("ctxsyncotel: the Meter's RegisterCallback gave a nil Registration, with no error")
	}
	return reg, err
}

// registration is what the Observe methods return: it unregisters the
// callback, and then, once, frees the metrics for another Observe.
type registration struct {
	metric.Registration
	once    sync.Once
	release *atomic.Bool
}

func (r *registration) Unregister() error {
	err := r.Registration.Unregister()
	r.once.Do(func() { r.release.Store(false) })
	return err
}
