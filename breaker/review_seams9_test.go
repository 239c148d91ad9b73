package breaker

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync/group"
)

// TestReviewSeams9_GroupCancelIsNoFailure pins a defect of the README's
// gather pattern (group.Map) over a breaker.Transport: the first failure
// cancels the group's ctx with a cause (the failing task's error), and
// net/http answers each request still in flight with context.Cause(ctx),
// not context.Canceled. The breaker took each of those for a failure of
// the host and opened, though the host answered nothing wrong: the caller
// gave up. A request whose ctx was cancelled, whatever its cause, fails
// with that cause and counts as ignored, as one cancelled plainly does.
func TestReviewSeams9_GroupCancelIsNoFailure(t *testing.T) {
	const slow = 4
	arrived := make(chan struct{}, slow)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/bad" {
			http.Error(w, "no such page", http.StatusNotFound)
			return
		}
		arrived <- struct{}{}
		<-r.Context().Done() // answers only when the client gives up
	}))
	defer srv.Close()
	conns := &http.Transport{}
	defer conns.CloseIdleConnections()
	tr := &Transport{Base: conns, Settings: Settings{FailureThreshold: 2}}
	client := &http.Client{Transport: tr}
	errNotFound := errors.New("page not found")

	paths := []string{"/bad"}
	for i := range slow {
		paths = append(paths, "/slow"+strconv.Itoa(i))
	}
	_, err := group.Map(context.Background(), paths, len(paths), func(ctx context.Context, p string) (int, error) {
		if p == "/bad" {
			// Fail only once every slow request is in flight.
			for range slow {
				<-arrived
			}
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+p, nil)
		if err != nil {
			return 0, err
		}
		resp, err := client.Do(req)
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
		if resp.StatusCode == http.StatusNotFound {
			return 0, errNotFound
		}
		return resp.StatusCode, nil
	})
	require.ErrorIs(t, err, errNotFound)

	b := tr.Breaker(httpxHost(srv.URL))
	require.NotNil(t, b)
	m := b.Metrics()
	require.Equal(t, Closed, m.State, "state after the group gave up on its requests")
	require.Zero(t, m.Total.Failures, "failures counted for requests the caller cancelled: %+v", m.Total)
	require.EqualValues(t, slow, m.Total.Ignored, "ignored: %+v", m.Total)
}

// httpxHost is the key breaker.Transport gives a URL of httptest: its
// host and port.
func httpxHost(u string) string {
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		panic(err)
	}
	return req.URL.Host
}

// TestReviewSeams9_ExecuteCauseIsNoFailure pins the same defect in
// Breaker.Execute, which breaker.Transport's fix did not reach: a call
// made through Do from the tasks of a group, as the README pairs them,
// whose ctx the group cancels with its first failure as the cause, fails
// in net/http with that cause, not context.Canceled, and the breaker
// counted it as a failure of the dependency and opened. A call whose error
// is the cause of its ctx's end counts as that end would: a cancellation is
// ignored.
func TestReviewSeams9_ExecuteCauseIsNoFailure(t *testing.T) {
	const slow = 4
	arrived := make(chan struct{}, slow)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		<-r.Context().Done() // answers only when the client gives up
	}))
	defer srv.Close()
	conns := &http.Transport{}
	defer conns.CloseIdleConnections()
	client := &http.Client{Transport: conns}
	b := New(Settings{FailureThreshold: 2})
	errBad := errors.New("a task failed")

	g, _ := group.New(context.Background(), group.Options{})
	for range slow {
		_ = g.Go(func(ctx context.Context) error {
			_, err := Do(ctx, b, func(ctx context.Context) (int, error) {
				req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
				if err != nil {
					return 0, err
				}
				resp, err := client.Do(req)
				if err != nil {
					return 0, err
				}
				defer resp.Body.Close()
				return resp.StatusCode, nil
			})
			return err
		})
	}
	_ = g.Go(func(context.Context) error {
		for range slow {
			<-arrived // every call is in flight
		}
		return errBad
	})
	require.ErrorIs(t, g.Wait(), errBad)
	m := b.Metrics()
	require.Equal(t, Closed, m.State, "state after the group gave up on its calls")
	require.Zero(t, m.Total.Failures, "failures counted for calls the caller cancelled: %+v", m.Total)
	require.EqualValues(t, slow, m.Total.Ignored, "ignored: %+v", m.Total)
}
