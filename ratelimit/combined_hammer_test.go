package ratelimit

import (
	"context"
	"errors"
	"math/rand/v2"
	"sort"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync/internal/testutil"
)

// grantLog records the grants of one limiter: when, and how many.
type grantLog struct {
	mu sync.Mutex
	at []int64 // nanoseconds of the bubble's clock
	n  []int
}

func (l *grantLog) add(n int) {
	now := time.Now().UnixNano() // the bubble's clock stands still until every goroutine blocks
	l.mu.Lock()
	l.at = append(l.at, now)
	l.n = append(l.n, n)
	l.mu.Unlock()
}

// sorted returns the grants in order of time.
func (l *grantLog) sorted() (at []int64, n []int) {
	idx := make([]int, len(l.at))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return l.at[idx[a]] < l.at[idx[b]] })
	for _, i := range idx {
		at, n = append(at, l.at[i]), append(n, l.n[i])
	}
	return at, n
}

// checkBucket checks that in every interval [a, b] of the grants, at most
// burst + (b-a)/tokenNs events were granted: the bound of a token bucket,
// exactly.
func checkBucket(t *testing.T, l *grantLog, burst int, tokenNs int64) {
	at, n := l.sorted()
	for i := range at {
		sum := 0
		for j := i; j < len(at); j++ {
			sum += n[j]
			if bound := int64(burst) + (at[j]-at[i])/tokenNs; int64(sum) > bound {
				t.Fatalf("bucket: %d events in [%d, %d] ns, want at most %d", sum, at[i], at[j], bound)
			}
		}
	}
}

// checkWindow checks that in every interval (t-window, t], at most limit
// events were granted: the bound of a sliding window, exactly.
func checkWindow(t *testing.T, l *grantLog, limit int, window int64) {
	at, n := l.sorted()
	for j := range at {
		sum := 0
		for i := j; i >= 0 && at[i] > at[j]-window; i-- {
			sum += n[i]
		}
		// Later grants at the same time count too.
		for k := j + 1; k < len(at) && at[k] == at[j]; k++ {
			sum += n[k]
		}
		if sum > limit {
			t.Fatalf("window: %d events in the window ending at %d ns, want at most %d", sum, at[j], limit)
		}
	}
}

// TestHammerCombined: goroutines take from two Combineds that share a
// SlidingWindow, one with a TokenBucket, the other with a counter, and from
// the bucket and the window directly, with AllowN and with WaitN under random
// deadlines and cancellations, in virtual time. Every grant is logged against
// each limiter it took from; afterwards each limiter's own bound holds
// exactly over the whole log, every goroutine has returned, and every limiter
// is back to full.
func TestHammerCombined(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const (
			burst   = 5
			tokenNs = int64(100 * time.Millisecond)
			limit   = 8
			window  = int64(time.Second)
		)
		tb := NewTokenBucket(10, burst)
		sw := NewSlidingWindow(limit, time.Duration(window))
		sc := NewSlidingWindowCounter(6, time.Second)
		c1 := All(tb, sw)
		c2 := All(sw, sc)
		var tbLog, swLog grantLog
		var wg sync.WaitGroup
		for g := range 12 {
			wg.Go(func() {
				r := rand.New(rand.NewPCG(uint64(g), 43))
				for range testutil.HammerRounds(60) {
					n := 1 + r.IntN(3)
					var ok bool
					var logs []*grantLog
					switch op := r.IntN(8); op {
					case 0, 1:
						ok, logs = c1.AllowN(n), []*grantLog{&tbLog, &swLog}
					case 2:
						ok, logs = c2.AllowN(n), []*grantLog{&swLog}
					case 3:
						ok, logs = tb.AllowN(n), []*grantLog{&tbLog}
					case 4:
						ok, logs = sw.AllowN(n), []*grantLog{&swLog}
					default:
						ctx, cancel := context.WithCancel(t.Context())
						if r.IntN(2) == 0 {
							ctx, cancel = context.WithTimeout(t.Context(), time.Duration(r.IntN(2000))*time.Millisecond)
						}
						stop := time.AfterFunc(time.Duration(r.IntN(1500))*time.Millisecond, cancel)
						var err error
						switch op {
						case 5, 6:
							err, logs = c1.WaitN(ctx, n), []*grantLog{&tbLog, &swLog}
						default:
							err, logs = c2.WaitN(ctx, n), []*grantLog{&swLog}
						}
						stop.Stop()
						cancel()
						switch {
						case err == nil:
							ok = true
						case errors.Is(err, context.DeadlineExceeded), err == context.Canceled:
						default:
							t.Errorf("WaitN = %v", err)
						}
					}
					if ok {
						for _, l := range logs {
							l.add(n)
						}
					}
					time.Sleep(time.Duration(r.IntN(200)) * time.Millisecond)
				}
			})
		}
		wg.Wait()
		require.NotEmpty(t, tbLog.at)
		checkBucket(t, &tbLog, burst, tokenNs)
		checkWindow(t, &swLog, limit, window)
		// Nothing leaked nor stayed held: all are full again.
		time.Sleep(time.Hour)
		assert.Equal(t, float64(burst), tb.Tokens())
		assert.True(t, c1.AllowN(burst))
		assert.True(t, sw.AllowN(limit-burst))
		assert.True(t, sc.AllowN(6))
	})
}

// FuzzCombined runs AllowN on All(bucket, window) or All(window, bucket), on the bucket and on the
// window, with time passing between, against a plain model of each limit: a
// theoretical arrival time for the bucket, the list of grant times for the
// window. Any refund that gave back more or less than was taken shows as a
// decision the model does not make.
func FuzzCombined(f *testing.F) {
	f.Add(uint8(3), uint8(4), false, []byte{0, 2, 0, 0, 3, 0, 1, 1, 5, 2, 2, 9, 0, 1, 0})
	f.Add(uint8(1), uint8(1), false, []byte{0, 1, 0, 0, 1, 0, 1, 1, 200, 2, 1, 255})
	f.Add(uint8(4), uint8(6), true, []byte{2, 1, 3, 0, 2, 0, 1, 3, 0, 0, 2, 1, 2, 0, 7, 0, 1, 0, 0, 3, 100, 0, 2, 0})
	// The window grants, the bucket refuses: the window must give back
	// exactly, or its last 4 do not fit.
	f.Add(uint8(1), uint8(5), true, []byte{0, 0, 0, 0, 0, 0, 2, 3, 0})
	f.Fuzz(func(t *testing.T, burst, limit uint8, windowFirst bool, ops []byte) {
		if burst == 0 || limit == 0 || len(ops) > 3*200 {
			return
		}
		const tokenNs = int64(10 * time.Millisecond) // 100 a second
		window := int64(time.Second)
		synctest.Test(t, func(t *testing.T) {
			tb := NewTokenBucket(100, int(burst))
			sw := NewSlidingWindow(int(limit), time.Duration(window))
			// The first limiter is the one that gives back when the second
			// refuses: either order tries a refund of each.
			c := All(tb, sw)
			if windowFirst {
				c = All(sw, tb)
			}
			// The models.
			tat := int64(0)
			var grants []int64
			bucketFits := func(n int, now int64) bool {
				return max(tat, now)+int64(n)*tokenNs-now <= int64(burst)*tokenNs
			}
			windowFits := func(n int, now int64) bool {
				in := 0
				for _, g := range grants {
					if g > now-window {
						in++
					}
				}
				return in+n <= int(limit)
			}
			start := time.Now()
			for i := 0; i+2 < len(ops); i += 3 {
				n := 1 + int(ops[i+1])%8
				now := int64(time.Since(start))
				var got, want bool
				switch ops[i] % 3 {
				case 0:
					got, want = c.AllowN(n), bucketFits(n, now) && windowFits(n, now)
					if want {
						tat = max(tat, now) + int64(n)*tokenNs
						for range n {
							grants = append(grants, now)
						}
					}
				case 1:
					got, want = tb.AllowN(n), bucketFits(n, now)
					if want {
						tat = max(tat, now) + int64(n)*tokenNs
					}
				case 2:
					got, want = sw.AllowN(n), windowFits(n, now)
					if want {
						for range n {
							grants = append(grants, now)
						}
					}
				}
				if got != want {
					t.Fatalf("op %d (kind %d, n %d) at %v: got %v, want %v", i/3, ops[i]%3, n, time.Duration(now), got, want)
				}
				time.Sleep(time.Duration(ops[i+2]) * 5 * time.Millisecond)
			}
		})
	})
}
