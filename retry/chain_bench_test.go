package retry_test

import (
	"fmt"
	"io"
	"net/http"
	"testing"

	"github.com/ctxsync/ctxsync/adaptive"
	"github.com/ctxsync/ctxsync/breaker"
	"github.com/ctxsync/ctxsync/internal/httpx"
	"github.com/ctxsync/ctxsync/ratelimit"
	"github.com/ctxsync/ctxsync/retry"
)

// rv15cInstant answers at once, with a copy of resp.
type rv15cInstant struct{ resp http.Response }

func (b *rv15cInstant) RoundTrip(*http.Request) (*http.Response, error) {
	r := b.resp
	return &r, nil
}

// rv15cWrap wraps base in a Transport of pkg that takes nothing of note.
func rv15cWrap(pkg string, base http.RoundTripper) http.RoundTripper {
	switch pkg {
	case "retry":
		return &retry.Transport{Base: base}
	case "ratelimit":
		return &ratelimit.Transport{Base: base, Limiter: ratelimit.NewTokenBucket(1e12, 1<<40)}
	case "adaptive":
		return &adaptive.Transport{Base: base, Limiter: adaptive.New(adaptive.Config{})}
	default:
		return &breaker.Transport{Base: base}
	}
}

// BenchmarkRV15cChain: a request through a chain of 1, 3 and 8 of the
// library's Transports, of one package or mixed, over a Base that answers
// at once: what the walk down the chain that each RoundTrip makes adds.
func BenchmarkRV15cChain(b *testing.B) {
	order := []string{"retry", "ratelimit", "adaptive", "breaker"}
	for _, pkg := range append(order, "mixed") {
		for _, n := range []int{1, 3, 8} {
			b.Run(fmt.Sprintf("%s/%d", pkg, n), func(b *testing.B) {
				var rt http.RoundTripper = &rv15cInstant{resp: http.Response{StatusCode: 200, Body: http.NoBody}}
				for i := n - 1; i >= 0; i-- {
					p := pkg
					if pkg == "mixed" {
						p = order[i%4]
					}
					rt = rv15cWrap(p, rt)
				}
				req, _ := http.NewRequest("GET", "http://h.example/", nil)
				b.ReportAllocs()
				for b.Loop() {
					resp, err := rt.RoundTrip(req)
					if err != nil {
						b.Fatal(err)
					}
					_, _ = io.Copy(io.Discard, resp.Body)
				}
			})
		}
	}
}

// BenchmarkRV15cChainOver: the walk alone, from the top of a mixed chain.
func BenchmarkRV15cChainOver(b *testing.B) {
	order := []string{"retry", "ratelimit", "adaptive", "breaker"}
	for _, n := range []int{1, 3, 8} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			var rt http.RoundTripper = &rv15cInstant{}
			for i := n - 1; i >= 0; i-- {
				rt = rv15cWrap(order[i%4], rt)
			}
			b.ReportAllocs()
			for b.Loop() {
				httpx.ChainOver(rt, 1)
			}
		})
	}
}
