package ctxsync_test

// The expectations of golang.org/x/sync's singleflight tests
// (singleflight/singleflight_test.go), re-expressed against Flight, one
// test here per test there, named after it. Where our contract deliberately
// differs, the test says where and why. The tests run in synctest bubbles:
// where singleflight's wait a second of real time to call a Do hung, a bubble
// reports the deadlock, and its sleeps are virtual.

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync"
)

type portErr struct{}

func (*portErr) Error() string { return "error value" }

// TestPanicErrorUnwrap: a panic in fn comes back as an error. singleflight's
// test only asks for an error; ours also sees through to a panic value that
// is an error, with errors.Is.
func TestFlightPortPanicErrorUnwrap(t *testing.T) {
	for _, c := range []struct {
		name  string
		value any
		isErr bool
	}{
		{"value not an error", "string value", false},
		{"value an error", new(portErr), true},
	} {
		t.Run(c.name, func(t *testing.T) {
			var f ctxsync.Flight[string, any]
			var recovered any
			func() {
				defer func() { recovered = recover() }()
				_, _, _ = f.Do(context.Background(), c.name, func(context.Context) (any, error) { panic(c.value) })
			}()
			err, ok := recovered.(error)
			require.True(t, ok, "recovered %T, want an error", recovered)
			target := new(portErr)
			require.Equal(t, c.isErr, errors.Is(err, target) || errors.As(err, &target))
		})
	}
}

// TestDo
func TestFlightPortDo(t *testing.T) {
	var f ctxsync.Flight[string, any]
	v, err, _ := f.Do(context.Background(), "key", func(context.Context) (any, error) { return "bar", nil })
	require.NoError(t, err)
	require.Equal(t, "bar", v)
}

// TestDoErr
func TestFlightPortDoErr(t *testing.T) {
	var f ctxsync.Flight[string, any]
	someErr := errors.New("some error")
	v, err, _ := f.Do(context.Background(), "key", func(context.Context) (any, error) { return nil, someErr })
	require.Equal(t, someErr, err)
	require.Nil(t, v)
}

// TestDoDupSuppress: of ten callers that come while the first call is in
// flight, some share it: fn runs more than zero and fewer than ten times.
func TestFlightPortDoDupSuppress(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var f ctxsync.Flight[string, any]
		c := make(chan string, 1)
		var calls atomic.Int32
		firstIn := make(chan struct{})
		fn := func(context.Context) (any, error) {
			if calls.Add(1) == 1 {
				close(firstIn)
			}
			v := <-c
			c <- v                            // for the calls that come later
			time.Sleep(10 * time.Millisecond) // let more callers join
			return v, nil
		}
		const n = 10
		var wg sync.WaitGroup
		for range n {
			wg.Go(func() {
				v, err, _ := f.Do(context.Background(), "key", fn)
				if err != nil || v != "bar" {
					t.Errorf("Do = %v, %v; want bar, nil", v, err)
				}
			})
		}
		<-firstIn
		c <- "bar"
		wg.Wait()
		got := calls.Load()
		require.True(t, got > 0 && got < n, "fn ran %d times, want over 0 and under %d", got, n)
	})
}

// TestForget (golang/go#31420): after Forget, a new call starts, and a Do
// that comes later joins the new call, not the forgotten one.
func TestFlightPortForget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var f ctxsync.Flight[string, int]
		firstStarted, unblockFirst, firstFinished := make(chan struct{}), make(chan struct{}), make(chan struct{})
		go f.Do(context.Background(), "key", func(context.Context) (int, error) {
			close(firstStarted)
			<-unblockFirst
			close(firstFinished)
			return 1, nil
		})
		<-firstStarted
		f.Forget("key")

		unblockSecond := make(chan struct{})
		second := goDo(context.Background(), &f, "key", func(context.Context) (int, error) {
			<-unblockSecond
			return 2, nil
		})
		synctest.Wait() // singleflight's DoChan has joined when it returns; our Do, in a goroutine, by now

		close(unblockFirst)
		<-firstFinished
		third := goDo(context.Background(), &f, "key", func(context.Context) (int, error) { return 3, nil })
		synctest.Wait()

		close(unblockSecond)
		<-second
		require.Equal(t, 2, (<-third).v, "the third Do gets the second call's result")
	})
}

// TestDoChan: Flight has no DoChan (a caller that selects on a channel wants
// to leave, which Do's ctx gives); its users run Do in a goroutine, as here.
func TestFlightPortDoChan(t *testing.T) {
	var f ctxsync.Flight[string, any]
	res := make(chan any, 1)
	go func() {
		v, err, _ := f.Do(context.Background(), "key", func(context.Context) (any, error) { return "bar", nil })
		require.NoError(t, err)
		res <- v
	}()
	require.Equal(t, "bar", <-res)
}

// TestPanicDo (golang/go#41133): a panicking fn makes every caller panic,
// and no Do hangs.
func TestFlightPortPanicDo(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var f ctxsync.Flight[string, any]
		fn := func(context.Context) (any, error) { panic("invalid memory address or nil pointer dereference") }
		const n = 5
		var panics atomic.Int32
		var wg sync.WaitGroup
		for range n {
			wg.Go(func() {
				defer func() {
					if recover() != nil {
						panics.Add(1)
					}
				}()
				_, _, _ = f.Do(context.Background(), "key", fn)
			})
		}
		wg.Wait()
		require.EqualValues(t, n, panics.Load())
	})
}

// TestGoexitDo: no Do hangs when fn calls runtime.Goexit. Deliberate
// difference: singleflight runs fn in the first caller's goroutine and ends
// every caller's goroutine with Goexit; ours runs fn in its own, and each
// caller gets the error ErrGoexit, its goroutine going on.
func TestFlightPortGoexitDo(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var f ctxsync.Flight[string, any]
		fn := func(context.Context) (any, error) {
			runtime.Goexit()
			return nil, nil
		}
		const n = 5
		var wg sync.WaitGroup
		for range n {
			wg.Go(func() {
				_, err, _ := f.Do(context.Background(), "key", fn)
				if err != ctxsync.ErrGoexit {
					t.Errorf("Do = %v, want ErrGoexit", err)
				}
			})
		}
		wg.Wait()
	})
}

// TestPanicDoChan: singleflight ends the program when the fn of a DoChan
// panics, there being no caller's goroutine to raise it in. Deliberate
// difference: Flight has no DoChan, and a panic in a call that every caller
// had left is dropped (see Flight); the program goes on.
func TestFlightPortPanicDoChan(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var f ctxsync.Flight[string, any]
		ctx, cancel := context.WithCancel(context.Background())
		unblock := make(chan struct{})
		res := make(chan error, 1)
		go func() {
			_, err, _ := f.Do(ctx, "", func(context.Context) (any, error) {
				<-unblock
				panic("Panicking in DoChan")
			})
			res <- err
		}()
		synctest.Wait()
		cancel()
		require.Equal(t, context.Canceled, <-res)
		close(unblock)
		synctest.Wait()
	})
}

// TestPanicDoSharedByDoChan: a caller that joined a call whose fn panics
// does not run its own fn, and does not return normally. singleflight ends
// the program there (its second caller is a DoChan); ours raises the panic
// in the joined caller's goroutine, as in the first's.
func TestFlightPortPanicDoSharedByDoChan(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var f ctxsync.Flight[string, any]
		blocked, unblock := make(chan struct{}), make(chan struct{})
		panics := make(chan any, 2)
		doRecover := func(fn func(context.Context) (any, error)) {
			defer func() { panics <- recover() }()
			_, _, _ = f.Do(context.Background(), "", fn)
			t.Error("Do returned normally")
		}
		go doRecover(func(context.Context) (any, error) {
			close(blocked)
			<-unblock
			panic("Panicking in Do")
		})
		<-blocked
		go doRecover(func(context.Context) (any, error) {
			panic("the second caller's fn unexpectedly ran")
		})
		synctest.Wait()
		close(unblock)
		for range 2 {
			p, ok := (<-panics).(*ctxsync.PanicError)
			require.True(t, ok)
			require.Equal(t, "Panicking in Do", p.Value)
		}
	})
}

// ExampleGroup: two callers of one key; the second shares the first's call.
func TestFlightPortExampleGroup(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var f ctxsync.Flight[string, string]
		block := make(chan struct{})
		type res struct {
			v      string
			shared bool
		}
		do := func(fn string) <-chan res {
			ch := make(chan res, 1)
			go func() {
				v, _, shared := f.Do(context.Background(), "key", func(context.Context) (string, error) {
					<-block
					return fn, nil
				})
				ch <- res{v, shared}
			}()
			synctest.Wait()
			return ch
		}
		res1, res2 := do("func 1"), do("func 2")
		close(block)
		r1, r2 := <-res1, <-res2
		require.True(t, r2.shared, "Shared")
		require.Equal(t, r1.v, r2.v, "Equal results")
		require.Equal(t, "func 1", r1.v, "Result")
	})
}
