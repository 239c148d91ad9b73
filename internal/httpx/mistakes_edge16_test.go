package httpx

import (
	"errors"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// badRT stands for one of the library's Transports whose own check finds
// mistake, or panics (a check that asks a limiter of the user's).
type badRT struct {
	base    http.RoundTripper
	mistake string
	panics  bool
}

func (*badRT) RoundTrip(*http.Request) (*http.Response, error) {
	return nil, errors.New("badRT sends nothing")
}

func init() {
	RegisterTransport("bad", func(t *badRT) http.RoundTripper { return t.base }, func(t *badRT) error {
		if t.panics {
			panic("user: Check panicked")
		}
		if t.mistake != "" {
			return errors.New(t.mistake)
		}
		return nil
	})
}

// userRT is a RoundTripper of the user's, with a Check that Mistakes must
// not ask.
type userRT struct{ asked bool }

func (*userRT) RoundTrip(*http.Request) (*http.Response, error) { return nil, nil }
func (u *userRT) Check() error                                  { u.asked = true; return errors.New("user: mistake") }

// TestMistakes: Mistakes lists every mistake of the library's Transports
// down a chain, in order, stops at a Base of the user's without asking its
// Check, names a Base that is nil but for its type, takes a check that
// panics as no mistake, and for a loop names the loop as the Transport of
// each package would; IsMistake matches the very messages, as strings only.
func TestMistakes(t *testing.T) {
	require.Nil(t, Mistakes("test", nil))
	require.Nil(t, Mistakes("test", http.DefaultTransport))
	require.Nil(t, Mistakes("test", &chainRT{base: &badRT{}}))

	u := &userRT{}
	chain := &badRT{mistake: "bad: one", base: &chainRT{base: &badRT{panics: true, base: &badRT{mistake: "bad: two", base: u}}}}
	ms := Mistakes("test", chain)
	require.Equal(t, []string{"bad: one", "bad: two"}, ms)
	require.False(t, u.asked, "a Base of the user's is not asked")
	require.True(t, IsMistake("bad: two", ms))
	require.False(t, IsMistake("bad: three", ms))
	require.False(t, IsMistake(errors.New("bad: one"), ms), "the library panics with the string itself")
	require.False(t, IsMistake(nil, ms))
	require.False(t, IsMistake(nil, nil))

	require.Equal(t, []string{"bad: Transport with a nil *httpx.chainRT as Base"},
		Mistakes("test", &badRT{base: (*chainRT)(nil)}))
	require.Equal(t, []string{"test: Transport with a nil *httpx.badRT as Base"},
		Mistakes("test", (*badRT)(nil)))

	loop := &chainRT{}
	loop.base = &badRT{base: loop}
	ms = Mistakes("test", loop)
	require.Contains(t, ms, Nesting("test"))
	require.Contains(t, ms, Nesting("bad"))
}
