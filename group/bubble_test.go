package group_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ctxsync/ctxsync/group"
)

// TestInBubble: a Group made in a synctest bubble works on virtual time, and
// Wait blocks durably there.
func TestInBubble(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		g, _ := group.New(context.Background(), group.Options{Limit: 2})
		for i := range 4 {
			g.Go(func(ctx context.Context) error {
				time.Sleep(time.Duration(i+1) * time.Second)
				return nil
			})
		}
		g.Wait()
		// Slots: 1s and 2s first, then 3s from 1s and 4s from 2s.
		if got := time.Since(start); got != 6*time.Second {
			t.Errorf("the group took %v of virtual time, want 6s", got)
		}
	})
}

// TestMadeOutsideBubbleUsedInside: a Group made outside a bubble, and its
// ctx, serve in one.
func TestMadeOutsideBubbleUsedInside(t *testing.T) {
	g, _ := group.New(context.Background(), group.Options{Limit: 1})
	synctest.Test(t, func(t *testing.T) {
		for range 3 {
			g.Go(func(ctx context.Context) error { return nil })
		}
		if err := g.Wait(); err != nil {
			t.Errorf("Wait = %v", err)
		}
	})
}

// TestBubbleHandOver: a Group used in a bubble and then outside it, made on
// either side, keeps working (with a sync.WaitGroup inside, the Add outside
// after the bubble was a fatal error).
func TestBubbleHandOver(t *testing.T) {
	nop := func(context.Context) error { return nil }
	g, _ := group.New(context.Background(), group.Options{Limit: 1})
	synctest.Test(t, func(t *testing.T) {
		g.Go(nop)
		g.TryGo(nop)
		synctest.Wait()
	})
	g.Go(nop)
	if err := g.Wait(); err != nil {
		t.Errorf("made outside: Wait = %v", err)
	}

	synctest.Test(t, func(t *testing.T) {
		g, _ = group.New(context.Background(), group.Options{Limit: 1})
		g.Go(func(context.Context) error { time.Sleep(time.Second); return nil })
		synctest.Wait()
		time.Sleep(2 * time.Second)
	})
	g.Go(nop)
	if err := g.Wait(); err != nil {
		t.Errorf("made inside: Wait = %v", err)
	}
}
