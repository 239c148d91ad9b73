package redissync

import (
	"context"
	"testing"
	"time"
)

// Regression: a pipelined attempt whose caller gave up is taken back by
// giveUp's goroutine once the pipeline ends, after roundTrip when the
// client (ContextTimeoutEnabled) gave the pipeline up unanswered, for its
// bytes may yet land. When a client hook panicked in that pipeline, the op
// carries the panic and no error, and the take-back ran at once: an attempt
// landing after it is granted a permit that nobody holds, for the Lease.
// Right: as in takeBackPanicked, such an attempt is taken back once more
// after roundTrip. (The op is made by hand here, and the attempt's late
// landing played by running it after the pipeline "ended".)
func TestReviewM7_GiveUpAfterPipelinePanicTakesBackLate(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			c := b.strictClient(t, true)
			cfg := b.config(c, "m7giveuppanic", 1, time.Minute)
			cfg.Timeout = 200 * time.Millisecond
			s := mustNew(t, cfg)
			ctx := context.Background()
			warm(t, s)

			id := s.newID()
			o := &op{done: make(chan struct{})} // sent: not in the queue
			if _, answered, _ := s.giveUp(o, id); answered {
				t.Fatal("giveUp answered an op whose pipeline has not ended")
			}
			o.panicked = "hook"
			close(o.done)
			time.Sleep(100 * time.Millisecond) // a take-back at once is over by now
			r, err := s.attempt(ctx, id, s.entryArg, false)
			if err != nil || !r.granted {
				t.Fatalf("the late attempt: %+v, %v; want it granted", r, err)
			}
			awaitEmpty(t, s, s.roundTrip+20*time.Second, "after the pipeline panicked (the late attempt not taken back)")
		})
	}
}
