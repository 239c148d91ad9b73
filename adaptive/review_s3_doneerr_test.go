package adaptive

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
)

// s3DoneNoErrCtx is a caller's ctx whose Done channel is closed while its Err
// still returns nil (see the root package's test of the same name).
type s3DoneNoErrCtx struct{ context.Context }

var s3ClosedDone = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

func (s3DoneNoErrCtx) Done() <-chan struct{} { return s3ClosedDone }
func (s3DoneNoErrCtx) Err() error            { return nil }

// An Acquire at the limit that gives up because its ctx's Done channel is
// closed must fail, and leave the slots as they were, whatever that ctx's
// Err says in that moment. (context.WithTimeout panics for such a parent,
// "missing cancel error": a panic is acceptable if it leaves the Limiter
// whole; a Ticket for no slot is not.)
func TestReviewS3_AcquireDoneClosedErrNil(t *testing.T) {
	for _, mw := range []time.Duration{0, time.Hour, 100 * 365 * 24 * time.Hour} {
		synctest.Test(t, func(t *testing.T) {
			l := New(Config{InitialLimit: 1, MinLimit: 1, MaxLimit: 1, MaxWait: mw})
			held, err := l.Acquire(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			func() {
				defer func() { _ = recover() }()
				if _, err := l.Acquire(s3DoneNoErrCtx{context.Background()}); err == nil {
					t.Errorf("MaxWait %v: Acquire at the limit under a ctx whose Done is closed and Err nil = a Ticket, want an error", mw)
				}
			}()
			if n := l.InFlight(); n != 1 {
				t.Errorf("MaxWait %v: InFlight = %d, want 1", mw, n)
			}
			if !l.q.TryLock() {
				t.Fatalf("MaxWait %v: the Limiter's lock was left held", mw)
			}
			l.q.Unlock()
			held.Ignore()
		})
	}
}
