package pool

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync/breaker"
)

// nameLog keeps the Name of every event told to a pool's hooks, by kind.
type nameLog struct {
	mu    sync.Mutex
	names []string
}

func (l *nameLog) add(kind, name string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.names = append(l.names, kind+" "+name)
}

func (l *nameLog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := l.names
	l.names = nil
	return n
}

func (l *nameLog) hooks() Hooks {
	return Hooks{
		OnAcquire: func(e AcquireEvent) { l.add("acquire", e.Name) },
		OnCreate:  func(e CreateEvent) { l.add("create", e.Name) },
	}
}

// TestNameInEveryEvent: Config.Name is in Stats and in the event of every
// way an Acquire or a call to New ends: from an idle resource, after a
// wait, by TryAcquire, with ctx's error, with New's error, with New's
// panic, and refused by the breaker. Hooks made before the pool need it.
func TestNameInEveryEvent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var log nameLog
		b := breaker.New(breaker.Settings{FailureThreshold: breaker.NoThreshold})
		var mu sync.Mutex
		next := "" // what New does next: "", "fail" or "panic"
		p := mustNew(t, Config[int]{
			Name: "db",
			New: func(context.Context) (int, error) {
				mu.Lock()
				defer mu.Unlock()
				switch next {
				case "fail":
					return 0, errors.New("down")
				case "panic":
					panic("New exploded")
				}
				return 1, nil
			},
			MaxSize: 2,
			Breaker: b,
			Hooks:   log.hooks(),
		})
		require.Equal(t, "db", p.Stats().Name)
		set := func(s string) {
			mu.Lock()
			next = s
			mu.Unlock()
		}
		steps := []struct {
			what string
			do   func()
		}{
			{"an Acquire that waits for New", func() {
				r, err := p.Acquire(t.Context())
				require.NoError(t, err)
				r.Release()
			}},
			{"an Acquire of an idle resource", func() {
				r, err := p.Acquire(t.Context())
				require.NoError(t, err)
				r.Release()
			}},
			{"a TryAcquire", func() {
				r, ok := p.TryAcquire()
				require.True(t, ok)
				r.Release()
			}},
			{"an Acquire that fails with New", func() {
				r, err := p.Acquire(t.Context()) // the idle one, held
				require.NoError(t, err)
				set("fail")
				_, err = p.Acquire(t.Context())
				require.ErrorContains(t, err, "down")
				set("")
				r.Release()
			}},
			{"an Acquire whose New panics", func() {
				r, err := p.Acquire(t.Context())
				require.NoError(t, err)
				set("panic")
				require.Panics(t, func() { _, _ = p.Acquire(t.Context()) })
				set("")
				r.Release()
			}},
			{"an Acquire that the breaker refuses", func() {
				r, err := p.Acquire(t.Context())
				require.NoError(t, err)
				b.ForceOpen()
				_, err = p.Acquire(t.Context())
				require.ErrorIs(t, err, breaker.ErrOpen)
				b.Reset()
				r.Release()
			}},
			{"an Acquire whose ctx ends as it waits", func() {
				r1, err := p.Acquire(t.Context())
				require.NoError(t, err)
				r2, err := p.Acquire(t.Context()) // made: the pool is full
				require.NoError(t, err)
				ctx, cancel := context.WithTimeout(t.Context(), time.Second)
				defer cancel()
				_, err = p.Acquire(ctx)
				require.ErrorIs(t, err, context.DeadlineExceeded)
				r1.Release()
				r2.Release()
			}},
		}
		for _, s := range steps {
			s.do()
			synctest.Wait() // OnCreate may be told after the Acquire returns
			names := log.take()
			require.NotEmpty(t, names, s.what)
			for _, n := range names {
				require.True(t, strings.HasSuffix(n, " db"), "%s: told %q, want the name db", s.what, n)
			}
		}
		require.NoError(t, p.Close(t.Context()))
		require.Equal(t, "db", p.Stats().Name, "after Close")
	})
}

// TestNameAsGiven: the pool never reads its Name, and tells it byte for
// byte: empty (the default), blank, not UTF-8, or a megabyte long.
func TestNameAsGiven(t *testing.T) {
	for _, name := range []string{"", " ", "\xff\xfe", "db\x00", strings.Repeat("n", 1<<20)} {
		var log nameLog
		p := mustNew(t, Config[int]{
			Name:    name,
			New:     func(context.Context) (int, error) { return 1, nil },
			MaxSize: 1,
			Hooks:   log.hooks(),
		})
		r, err := p.Acquire(context.Background())
		require.NoError(t, err)
		r.Release()
		require.NoError(t, p.Close(context.Background()))
		require.True(t, p.Stats().Name == name, "Stats.Name of a pool named %.20q", name)
		for _, n := range log.take() { // OnCreate may not have been told yet
			require.True(t, strings.HasSuffix(n, " "+name), "told %.30q, want the name %.20q", n, name)
		}
	}
}

// TestNameReadByHook: a hook that calls back into the pool reads the same
// name in its Stats as in its event.
func TestNameReadByHook(t *testing.T) {
	var p *Pool[int]
	var got []string
	p = mustNew(t, Config[int]{
		Name:    "cache",
		New:     func(context.Context) (int, error) { return 1, nil },
		MaxSize: 1,
		Hooks: Hooks{OnAcquire: func(e AcquireEvent) {
			got = append(got, e.Name, p.Stats().Name)
		}},
	})
	r, err := p.Acquire(context.Background())
	require.NoError(t, err)
	r.Release()
	require.NoError(t, p.Close(context.Background()))
	require.Equal(t, []string{"cache", "cache"}, got)
}
