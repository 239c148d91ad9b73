package redissync

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/ctxsync/ctxsync/internal/testutil"
)

// A caller's ctx is the caller's code: whichever of its method calls
// panics (once), in Acquire, TryAcquire or Release of a Keyed lock, the panic reaches the
// caller with nothing held in Redis and nothing of the key kept in the
// process. The lock is held by another caller first for Acquire, so that
// its calls queue and wait too.
func TestCtxPanicLeavesNothing(t *testing.T) {
	for _, b := range backends(t) {
		for _, ctxTimeouts := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/ContextTimeoutEnabled=%v", b.name, ctxTimeouts), func(t *testing.T) {
				c := b.strictClient(t, ctxTimeouts)
				k, err := NewKeyedLock(b.config(c, "ctxpanic", 1, time.Minute))
				if err != nil {
					t.Fatal(err)
				}
				bg := context.Background()
				check := func(what string, n int32) {
					t.Helper()
					awaitKeyedIdle(t, k, fmt.Sprintf("%s, ctx panicking at call %d", what, n))
					p, err := k.TryAcquire(bg, "a")
					if err != nil {
						t.Fatalf("%s, ctx panicking at call %d: TryAcquire = %v; the lock is held by nobody", what, n, err)
					}
					if err := p.Release(bg); err != nil {
						t.Fatal(err)
					}
				}
				for _, what := range []string{"TryAcquire", "Acquire", "Acquire behind a holder"} {
					for n := int32(1); ; n++ {
						var holder *Permit
						if what == "Acquire behind a holder" {
							if holder, err = k.Acquire(bg, "a"); err != nil {
								t.Fatal(err)
							}
						}
						ctx := &testutil.OnceCtx{Context: bg, PanicAt: n}
						var r any
						var p *Permit
						done := make(chan struct{})
						go func() {
							defer close(done)
							defer func() { r = recover() }()
							if what == "TryAcquire" {
								p, err = k.TryAcquire(ctx, "a")
							} else {
								p, err = k.Acquire(ctx, "a")
							}
						}()
						if holder != nil {
							// Let the call queue, then hand it the lock.
							time.Sleep(50 * time.Millisecond)
							if err := holder.Release(bg); err != nil {
								t.Fatal(err)
							}
						}
						select {
						case <-done:
						case <-time.After(30 * time.Second):
							t.Fatalf("%s, ctx panicking at call %d: no return", what, n)
						}
						if r == nil {
							// Past the calls it makes: done.
							if err == nil {
								if err := p.Release(bg); err != nil {
									t.Fatal(err)
								}
							}
							check(what, n)
							break
						}
						if r != testutil.ErrCtxPanic {
							t.Fatalf("%s panicked with %v", what, r)
						}
						check(what, n)
					}
				}
				for n := int32(1); ; n++ {
					p, err := k.Acquire(bg, "a")
					if err != nil {
						t.Fatal(err)
					}
					ctx := &testutil.OnceCtx{Context: bg, PanicAt: n}
					r := testutil.PanicOf(func() { err = p.Release(ctx) })
					if r == nil {
						if err != nil {
							t.Fatalf("Release = %v", err)
						}
						check("Release", n)
						break
					}
					if r != testutil.ErrCtxPanic {
						t.Fatalf("Release panicked with %v", r)
					}
					check("Release", n)
				}
			})
		}
	}
}

// As TestCtxPanicLeavesNothing, for an Acquire whose scripts queue behind
// another key's round trip (held at a client hook's gate) and go in a
// pipeline: a panic of ctx while the script waits in the queue left the
// script there, to be sent with nobody to take back the permit it got.
func TestCtxPanicQueuedLeavesNothing(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			c, h := hookedClient(t, b, true)
			k, err := NewKeyedLock(b.config(c, "ctxpanicq", 1, time.Minute))
			if err != nil {
				t.Fatal(err)
			}
			bg := context.Background()
			warm(t, k.newSemaphore("warm", ""))
			for n := int32(1); ; n++ {
				gate := make(chan struct{})
				h.gate.Store(&gate)
				xDone := make(chan *Permit, 1)
				go func() {
					p, err := k.Acquire(bg, "x")
					if err != nil {
						t.Error(err)
					}
					xDone <- p
				}()
				<-h.atGate // x's round trip is under way, held
				type result struct {
					p   *Permit
					err error
					r   any
				}
				aDone := make(chan result, 1)
				go func() {
					var res result
					res.r = testutil.PanicOf(func() { res.p, res.err = k.Acquire(&testutil.OnceCtx{Context: bg, PanicAt: n}, "a") })
					aDone <- res
				}()
				var a result
				returned := false
				for queued := false; !queued && !returned; {
					select {
					case a = <-aDone:
						returned = true
					case <-time.After(time.Millisecond):
						k.pipe.mu.Lock()
						queued = len(k.pipe.queue) > 0
						k.pipe.mu.Unlock()
					}
				}
				if !returned {
					// Queued: the panic, if any, comes while the script
					// waits; let it come before the gate opens.
					select {
					case a = <-aDone:
						returned = true
					case <-time.After(100 * time.Millisecond):
					}
				}
				close(gate)
				if x := <-xDone; x != nil {
					if err := x.Release(bg); err != nil {
						t.Fatal(err)
					}
				}
				if !returned {
					a = <-aDone
				}
				if a.r == nil {
					if a.err == nil {
						if err := a.p.Release(bg); err != nil {
							t.Fatal(err)
						}
					}
					break
				}
				if a.r != testutil.ErrCtxPanic {
					t.Fatalf("Acquire panicked with %v", a.r)
				}
				awaitKeyedIdle(t, k, fmt.Sprintf("ctx panicking at call %d", n))
				p, err := k.TryAcquire(bg, "a")
				if err != nil {
					t.Fatalf("ctx panicking at call %d: TryAcquire = %v; the lock is held by nobody", n, err)
				}
				if err := p.Release(bg); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}
