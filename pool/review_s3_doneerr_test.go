package pool

import (
	"context"
	"testing"
	"testing/synctest"
)

// doneNoErrCtx is a caller's ctx whose Done channel is closed while its Err
// still returns nil (see the root package's test of the same name).
type doneNoErrCtx struct{ context.Context }

var closedDone = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

func (doneNoErrCtx) Done() <-chan struct{} { return closedDone }
func (doneNoErrCtx) Err() error            { return nil }

// Regression: an Acquire of a full pool that gave up because its ctx's Done
// channel was closed returned (nil, ctx.Err()): (nil, nil) for a ctx whose
// Err lags its channel, and the caller dereferenced a nil *Resource. It must
// return an error (context.Canceled while Err is nil).
func TestReviewS3_AcquireDoneClosedErrNilReturnsAnError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		bg := context.Background()
		p, err := New(Config[int]{
			New:     func(context.Context) (int, error) { return 1, nil },
			MaxSize: 1,
		})
		if err != nil {
			t.Fatal(err)
		}
		held, err := p.Acquire(bg)
		if err != nil {
			t.Fatal(err)
		}
		r, err := p.Acquire(doneNoErrCtx{bg})
		if err == nil {
			t.Errorf("Acquire of a full pool under a ctx whose Done is closed and Err nil = (%v, nil), want an error", r)
		}
		held.Release()
		if err := p.Close(bg); err != nil {
			t.Fatal(err)
		}
	})
}
