package breaker_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ctxsync/ctxsync/breaker"
)

// Calls and Allows from many goroutines, whose fn panics, calls
// runtime.Goexit, fails or succeeds and whose ctx may be done, while
// IsFailure, OnStateChange and OnCall call back into the breaker (State,
// Counts, ForceOpen, Reset, Disable, Enable) or panic: once every call has
// ended, a breaker left half-open has every trial slot free.
func TestCallbacksReenterHammer(t *testing.T) {
	synctest.Test(t, callbacksReenterHammer)
}

func callbacksReenterHammer(t *testing.T) {
	var quiet atomic.Bool
	checked := 0
	defer func() {
		if checked == 0 && !t.Failed() {
			t.Error("no round ended half-open: the trial slots were never checked")
		}
	}()
	for round := 0; round < 60; round++ {
		quiet.Store(false)
		var b *breaker.Breaker
		b = breaker.New(breaker.Settings{
			FailureThreshold: 2, HalfOpenMaxCalls: 3, SuccessThreshold: 2, OpenTimeout: time.Microsecond,
			IsFailure: func(err error) bool {
				if quiet.Load() {
					return err != nil
				}
				if rand.IntN(50) == 0 {
					b.Counts()
				}
				if rand.IntN(200) == 0 {
					panic("isfailure")
				}
				return err != nil
			},
			OnStateChange: func(from, to breaker.State, c breaker.Counts) {
				if quiet.Load() {
					return
				}
				_ = b.State()
				if rand.IntN(100) == 0 {
					b.ForceOpen()
				}
				if rand.IntN(100) == 0 {
					b.Reset()
				}
				if rand.IntN(300) == 0 {
					panic("osc")
				}
			},
			OnCall: func(breaker.CallEvent) {
				if quiet.Load() {
					return
				}
				switch rand.IntN(400) {
				case 0:
					b.Disable()
				case 1:
					b.Enable()
				case 2:
					b.Reset()
				case 3:
					b.ForceOpen()
				}
			},
		})
		var wg sync.WaitGroup
		for g := 0; g < 6; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < 300; i++ {
					func() {
						defer func() { _ = recover() }()
						ctx, cancel := context.WithCancel(context.Background())
						defer cancel()
						if rand.IntN(10) == 0 {
							cancel()
						}
						done := make(chan struct{})
						go func() {
							defer close(done)
							defer func() { _ = recover() }()
							if rand.IntN(2) == 0 {
								d, err := b.Allow(ctx)
								if err == nil {
									switch rand.IntN(3) {
									case 0:
										d(nil)
									case 1:
										d(errors.New("x"))
									default:
										d(context.Canceled)
									}
								}
								return
							}
							_ = b.Execute(ctx, func(context.Context) error {
								switch rand.IntN(8) {
								case 0:
									panic("fn")
								case 1:
									runtime.Goexit()
								case 2, 3:
									return errors.New("x")
								}
								return nil
							})
						}()
						<-done
					}()
				}
			}()
		}
		wg.Wait()
		quiet.Store(true)
		time.Sleep(time.Millisecond)
		m := b.Metrics()
		if m.State != breaker.HalfOpen {
			continue
		}
		checked++
		for i := 0; i < 3; i++ {
			if _, err := b.Allow(context.Background()); err != nil {
				t.Fatalf("round %d: half-open with no call in flight, trial %d of 3 refused: %v", round, i+1, err)
			}
		}
	}
}
