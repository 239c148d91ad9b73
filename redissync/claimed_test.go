package redissync

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// TestMissedHandoffClaimedAtItsEnd: a waiter that missed the message of its
// hand-over and asks again when the lease held for it is all but over gets
// the permit with a whole lease from then, not a lease it cannot prove
// (Acquire would return a Permit already Lost while Redis still holds it).
func TestMissedHandoffClaimedAtItsEnd(t *testing.T) {
	for _, b := range backends(t) {
		for n := 1; n <= 2; n++ { // both layouts of the holders
			t.Run(fmt.Sprintf("%s/N=%d", b.name, n), func(t *testing.T) {
				ctx := context.Background()
				name := fmt.Sprintf("claimed%d", n)
				holder := mustNew(t, b.roomyConfig(t, name, n))
				w := mustNew(t, b.roomyConfig(t, name, n))
				var p *Permit
				for range n {
					var err error
					if p, err = holder.Acquire(ctx); err != nil {
						t.Fatal(err)
					}
				}
				id := w.newID()
				if r, err := w.attempt(ctx, id, w.entryArg, false); err != nil || r.granted {
					t.Fatalf("first attempt: %+v, %v; want in line", r, err)
				}
				if err := p.Release(ctx); err != nil { // hands the permit to id; nobody listens
					t.Fatal(err)
				}
				// The lease held for it ends in 2ms.
				now, err := w.client.Time(ctx).Result()
				if err != nil {
					t.Fatal(err)
				}
				setHolderEnd(t, w, id, now.Add(2*time.Millisecond))
				r, err := w.attempt(ctx, id, w.entryArg, true)
				if err != nil || !r.granted {
					t.Fatalf("attempt after the hand-over: %+v, %v; want granted", r, err)
				}
				if r.left < w.lease/2 {
					t.Errorf("a missed hand-over claimed with %v of its lease left; want a whole lease (%v)", r.left, w.lease)
				}
				if held, err := w.release(ctx, id); err != nil || !held {
					t.Errorf("release: %v, %v; want held", held, err)
				}
			})
		}
	}
}
