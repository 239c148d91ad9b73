package redissync

import (
	"math/rand/v2"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// TestReviewM7_PipeHoldHammer: round trips that end in time, late (past the
// hold, so that their place expires first) or as the timer fires, scripts
// queued, answered, dropped, or given up once sent, in a pipe with a hold:
// never more round trips under way than maxUnderway, never fewer than none,
// and none left under way nor queued once every one has ended. (The pipe
// has no client: each pipeline's run panics, which tells its callers.)
func TestReviewM7_PipeHoldHammer(t *testing.T) {
	for seed := uint64(0); seed < 20; seed++ {
		synctest.Test(t, func(t *testing.T) {
			p := &pipe{hold: time.Second, timeout: time.Second}
			r := rand.New(rand.NewPCG(seed, 1))
			var mu sync.Mutex
			rnd := func(n int) time.Duration {
				mu.Lock()
				defer mu.Unlock()
				return time.Duration(r.IntN(n)) * time.Millisecond
			}
			var wg sync.WaitGroup
			for g := 0; g < 8; g++ {
				wg.Go(func() {
					for i := 0; i < 50; i++ {
						time.Sleep(rnd(300))
						p.mu.Lock()
						u := p.underway
						p.mu.Unlock()
						if u < 0 || u > maxUnderway {
							t.Errorf("seed %d: %d round trips under way", seed, u)
						}
						o, pl := p.push(&call{}, nil)
						if o == nil {
							time.Sleep(rnd(2500)) // past the hold, sometimes
							p.ended(pl, nil)
							continue
						}
						tm := time.NewTimer(rnd(1500))
						select {
						case <-o.done:
						case <-tm.C:
							if !p.drop(o) {
								<-o.done
							}
						}
						tm.Stop()
					}
				})
			}
			wg.Wait()
			time.Sleep(10 * time.Second)
			synctest.Wait()
			p.mu.Lock()
			defer p.mu.Unlock()
			if p.underway != 0 || len(p.queue) != 0 {
				t.Fatalf("seed %d: underway %d, queued %d after every round trip ended", seed, p.underway, len(p.queue))
			}
		})
	}
}
