package pool

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
)

// s3ErrPanicCtx is a caller's ctx whose Err panics from its panicAt'th call.
type s3ErrPanicCtx struct {
	context.Context
	panicAt int32
	calls   atomic.Int32
}

func (c *s3ErrPanicCtx) Err() error {
	if c.calls.Add(1) >= c.panicAt {
		panic(errUserCtxPanic)
	}
	return c.Context.Err()
}

// Regression: checkOut marks the HealthCheck done (checked = true) before it
// looks at the caller's ctx, and a ctx.Err that panics there leaves the
// resource in stateChecked: neither idle nor handed out, never closed, and
// counted against MaxSize for good, so that a pool of one waits for ever.
// The look belongs inside the span that checkPanicked covers (or the
// resource must be put back), so that the panic leaves the pool whole.
func TestReviewS3_CtxErrPanicAfterHealthCheckKeepsTheResource(t *testing.T) {
	for at := int32(1); at <= 3; at++ {
		synctest.Test(t, func(t *testing.T) {
			bg := context.Background()
			p, err := New(Config[int]{
				New:             func(context.Context) (int, error) { return 1, nil },
				HealthCheck:     func(context.Context, int) error { return nil },
				HealthCheckSkip: NoHealthCheckSkip,
				MaxSize:         1,
			})
			if err != nil {
				t.Fatal(err)
			}
			r, err := p.Acquire(bg)
			if err != nil {
				t.Fatal(err)
			}
			r.Release() // idle: the next Acquire checks it
			ctx := &s3ErrPanicCtx{Context: bg, panicAt: at}
			func() {
				defer func() {
					if v := recover(); v != nil && v != errUserCtxPanic {
						t.Fatalf("Acquire panicked with %v", v)
					}
				}()
				if r, err := p.Acquire(ctx); err == nil {
					r.Release()
				}
			}()
			got := make(chan error, 1)
			go func() {
				r, err := p.Acquire(bg)
				if err == nil {
					r.Release()
				}
				got <- err
			}()
			synctest.Wait()
			select {
			case err := <-got:
				if err != nil {
					t.Fatal(err)
				}
			default:
				t.Errorf("ctx.Err panicked at its call %d of %d: a later Acquire of the pool of one waits for ever (the resource was kept)", at, ctx.calls.Load())
				done, cancel := context.WithCancel(bg)
				cancel()
				_ = p.Close(done) // gives up on the kept resource
				<-got
				return
			}
			if err := p.Close(bg); err != nil {
				t.Fatal(err)
			}
		})
	}
}
