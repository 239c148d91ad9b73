package ctxsyncotel_test

import (
	"net/http"
	"testing"
	"unicode/utf8"

	"go.opentelemetry.io/otel/attribute"

	"github.com/ctxsync/ctxsync"
	"github.com/ctxsync/ctxsync/breaker"
	"github.com/ctxsync/ctxsync/extra/ctxsyncotel"
)

// TestReview11bTransportHostNotUTF8: the OnCall of NewBreakerMetrics("")
// panics when told of a breaker whose name is not UTF-8, and a
// breaker.Transport names each host's breaker after the host of the
// request's URL, which url.Parse unescapes: "http://%ff.example/" has the
// host "\xff.example", input data that must not panic in the caller of
// RoundTrip. It does not, because the Transport's key lowercases the host
// with strings.ToLower, which writes each bad byte as U+FFFD: the call is
// measured under "\uFFFD.example". This pins that, lest a key that keeps
// the host's bytes turn a URL into a panic. (A Transport.Key of the user's
// that returns bytes of a request as they are still does.)
func TestReview11bTransportHostNotUTF8(t *testing.T) {
	r, opt := newProvider(t)
	m, err := ctxsyncotel.NewBreakerMetrics("", opt)
	if err != nil {
		t.Fatal(err)
	}
	tr := &breaker.Transport{Base: okTransport{}, Settings: breaker.Settings{
		OnCall:        m.OnCall(nil),
		OnStateChange: m.OnStateChange(nil),
	}}
	req, err := http.NewRequest(http.MethodGet, "http://%ff.example/", nil)
	if err != nil {
		t.Fatal(err)
	}
	if utf8.ValidString(req.URL.Host) {
		t.Fatalf("host %q: want one that is not UTF-8", req.URL.Host)
	}
	func() {
		defer func() {
			if p := recover(); p != nil {
				t.Fatalf("RoundTrip to a host that is not UTF-8 panicked: %v", p)
			}
		}()
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatalf("RoundTrip: %v", err)
		}
		_ = resp.Body.Close()
	}()
	c := collect(t, r)
	h := c.hist(t, "ctxsync.breaker.call.duration",
		attrString("ctxsync.breaker.name", "\uFFFD.example"), attrString("ctxsync.breaker.outcome", "success"))
	if h.Count != 1 {
		t.Errorf("call.duration{name=\"\\uFFFD.example\", success}: count %d, want 1", h.Count)
	}
}

// TestReview11bAttributesNotUTF8 pins a case that the refusal of names
// that are not UTF-8 missed: an attribute of WithAttributes is carried
// beside the name, in the same protobuf strings, and one whose key or
// string value is not UTF-8 fails the encoding of the whole export in the
// same way; every constructor took it without a word. The right
// behaviour: it is an error of the constructor or Observe function, as
// such a name is.
func TestReview11bAttributesNotUTF8(t *testing.T) {
	_, opt := newProvider(t)
	for _, kv := range []attribute.KeyValue{
		attribute.String("env", "\xff"),
		attribute.StringSlice("zones", []string{"a", "b\xfe"}),
		attribute.Int("\xffshard", 3),
	} {
		bad := ctxsyncotel.WithAttributes(attribute.String("ok", "é"), kv)
		if _, err := ctxsyncotel.NewLimiterMetrics("api", opt, bad); err == nil {
			t.Errorf("NewLimiterMetrics with the attribute %q=%q: no error", kv.Key, kv.Value.String())
		}
		if _, err := ctxsyncotel.NewBreakerMetrics("", opt, bad); err == nil {
			t.Errorf("NewBreakerMetrics with the attribute %q=%q: no error", kv.Key, kv.Value.String())
		}
		if reg, err := ctxsyncotel.ObserveSemaphore("s", ctxsync.NewSemaphore(1), opt, bad); err == nil {
			_ = reg.Unregister()
			t.Errorf("ObserveSemaphore with the attribute %q=%q: no error", kv.Key, kv.Value.String())
		}
	}
	// Valid UTF-8 of any kind passes.
	good := ctxsyncotel.WithAttributes(attribute.String("\u00e9t\u00e9", "\uFFFD\x00\U0001F600"), attribute.StringSlice("z", []string{"", "日本"}))
	if _, err := ctxsyncotel.NewLimiterMetrics("api", opt, good); err != nil {
		t.Errorf("NewLimiterMetrics with attributes in UTF-8: %v", err)
	}
}
