package retry_test

import (
	"errors"
	"io"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync/retry"
)

// TestTransportZeroBudgetClosesBody: a Policy with a Budget not made by
// NewBudget is misuse, and RoundTrip panics; like the panic of a Policy out
// of range, it must close the body of the request it does not send (the
// panic came from the first deposit, inside the attempt, and left it open).
func TestTransportZeroBudgetClosesBody(t *testing.T) {
	b := newBody("payload")
	req, err := http.NewRequest(http.MethodPut, "http://x/", b)
	require.NoError(t, err)
	req.GetBody = func() (io.ReadCloser, error) { return newBody("payload"), nil }
	sent := 0
	base := roundTripperFunc(func(*http.Request) (*http.Response, error) { sent++; return nil, errors.New("x") })
	tr := &retry.Transport{Base: base, Policy: retry.Policy{Budget: &retry.Budget{}}}
	require.PanicsWithValue(t, "retry: use NewBudget to make a Budget", func() { _, _ = tr.RoundTrip(req) })
	require.Zero(t, sent)
	require.True(t, b.closed, "the body of a request not sent was left open")
}
