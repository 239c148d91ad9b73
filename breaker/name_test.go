package breaker

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
)

// nameLog keeps "outcome name" for every CallEvent told to OnCall.
type nameLog struct {
	mu    sync.Mutex
	lines []string
}

func (l *nameLog) onCall(e CallEvent) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, e.Outcome.String()+" "+e.Name)
}

func (l *nameLog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.lines
	l.lines = nil
	return s
}

// TestCallEventName: every CallEvent carries Settings.Name, whatever its
// outcome and whichever way the call came (Execute, Allow), refusals
// included, so that an OnCall made before the breaker needs no name.
func TestCallEventName(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var log nameLog
		b := New(Settings{Name: "payments", FailureThreshold: 1, OpenTimeout: time.Second, OnCall: log.onCall})
		ctx := t.Context()
		require.NoError(t, b.Execute(ctx, succeed))
		require.ErrorIs(t, b.Execute(ctx, func(context.Context) error { return context.Canceled }), context.Canceled)
		done, err := b.Allow(ctx)
		require.NoError(t, err)
		done(errBoom) // opens it
		require.ErrorIs(t, b.Execute(ctx, succeed), ErrOpen)
		_, err = b.Allow(ctx)
		require.ErrorIs(t, err, ErrOpen)
		time.Sleep(time.Second)
		done, err = b.Allow(ctx) // the one trial
		require.NoError(t, err)
		require.ErrorIs(t, b.Execute(ctx, succeed), ErrOpen) // half-open, its slot taken
		done(nil)
		require.Equal(t, []string{
			"success payments", "ignored payments", "failure payments",
			"rejected payments", "rejected payments",
			"rejected payments", "success payments",
		}, log.take())
		require.Equal(t, "payments", b.Metrics().Name)
	})
}

// TestCallEventNameAsGiven: the breaker tells Settings.Name byte for byte:
// empty (the default), not UTF-8, or a megabyte long.
func TestCallEventNameAsGiven(t *testing.T) {
	for _, name := range []string{"", "\xff", strings.Repeat("b", 1<<20)} {
		var got []string
		b := New(Settings{Name: name, OnCall: func(e CallEvent) { got = append(got, e.Name) }})
		require.NoError(t, b.Execute(context.Background(), succeed))
		b.ForceOpen()
		require.ErrorIs(t, b.Execute(context.Background(), succeed), ErrOpen)
		require.True(t, len(got) == 2 && got[0] == name && got[1] == name, "told %.20q, want %.20q twice", got, name)
	}
}

// TestCallEventNameReadByOnCall: an OnCall that calls back into the breaker
// reads the same name in its Metrics as in its event.
func TestCallEventNameReadByOnCall(t *testing.T) {
	var b *Breaker
	var got []string
	b = New(Settings{Name: "inventory", OnCall: func(e CallEvent) {
		got = append(got, e.Name, b.Metrics().Name)
	}})
	require.NoError(t, b.Execute(context.Background(), succeed))
	require.Equal(t, []string{"inventory", "inventory"}, got)
}

// TestCallEventNameOfTransportHosts: one OnCall serves the breaker of every
// host of a Transport, and tells them apart by Name: the Transport's
// Settings.Name and the host, as in OpenError. A refusal of Precheck too.
func TestCallEventNameOfTransportHosts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var log nameLog
		tr := &Transport{Base: &statusBase{}, Settings: Settings{
			Name: "api", FailureThreshold: 1, OpenTimeout: time.Minute, OnCall: log.onCall,
		}}
		resp, _, err := send(t, tr, t.Context(), "http://a.test/ok")
		require.NoError(t, err)
		require.Equal(t, 200, resp.StatusCode)
		_, _, err = send(t, tr, t.Context(), "http://b.test/err") // opens b.test's breaker
		require.ErrorIs(t, err, errConnRefused)
		_, _, err = send(t, tr, t.Context(), "http://b.test/ok")
		var oe *OpenError
		require.True(t, errors.As(err, &oe), "RoundTrip = %v, want an *OpenError", err)
		req, err := http.NewRequest(http.MethodGet, "http://b.test/ok", nil)
		require.NoError(t, err)
		require.ErrorIs(t, tr.Precheck(req), ErrOpen)
		require.Equal(t, []string{
			"success api a.test", "failure api b.test",
			"rejected " + oe.Name, "rejected api b.test",
		}, log.take())
		require.Equal(t, "api b.test", oe.Name)
	})
}
