package httpx

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// rv16aBadErr is an error whose Error panics, as a nil pointer's would.
type rv16aBadErr struct{ msg *string }

func (e *rv16aBadErr) Error() string { return *e.msg }

// rv16aRT stands for one of the library's Transports whose check returns
// an error whose Error panics (a limiter's Check, of the user's, asked by
// it).
type rv16aRT struct{ base http.RoundTripper }

func (*rv16aRT) RoundTrip(*http.Request) (*http.Response, error) { return nil, nil }

func init() {
	RegisterTransport("rv16a", func(t *rv16aRT) http.RoundTripper { return t.base }, func(*rv16aRT) error { return &rv16aBadErr{} })
}

// TestRV16aMistakesErrorPanics: a check whose error's Error panics is taken
// as no mistake found there, as a check that panics is, and the walk goes
// on down the chain. On main the panic went on out of Mistakes.
func TestRV16aMistakesErrorPanics(t *testing.T) {
	var ms []string
	require.NotPanics(t, func() { ms = Mistakes("test", &rv16aRT{base: &badRT{mistake: "bad: below"}}) })
	require.Equal(t, []string{"bad: below"}, ms)
}
