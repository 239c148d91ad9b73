package retry

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

var errBudget = errors.New("down")

// grants withdraws until the budget refuses, at most limit times, and
// returns how many retries it allowed.
func grants(b *Budget, limit int) int {
	n := 0
	for n < limit && b.withdraw() {
		n++
	}
	return n
}

func deposits(b *Budget, n int) {
	for range n {
		b.deposit()
	}
}

func TestBudgetRatio(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := NewBudget(0.5, 0)
		if got := grants(b, 100); got != 0 {
			t.Fatalf("an unused budget granted %d retries, want 0", got)
		}
		deposits(b, 10)
		if got := grants(b, 100); got != 5 {
			t.Fatalf("ratio 0.5 after 10 first attempts granted %d retries, want 5", got)
		}
		deposits(b, 200) // past a batch: counted through the batch path too
		if got := grants(b, 1000); got != 100 {
			t.Fatalf("granted %d more retries after 200 more first attempts, want 100", got)
		}
	})
}

func TestBudgetMinPerSecond(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := NewBudget(0, 2)
		if got := grants(b, 100); got != 20 {
			t.Fatalf("minPerSecond 2 granted %d retries in a window, want 20", got)
		}
		// A retry is spent for the whole window: 5s later, still none.
		time.Sleep(5 * time.Second)
		if got := grants(b, 100); got != 0 {
			t.Fatalf("granted %d retries 5s later, want 0", got)
		}
		// Once the first retries have left the window, as many again.
		time.Sleep(5 * time.Second)
		if got := grants(b, 100); got != 20 {
			t.Fatalf("granted %d retries 10s later, want 20", got)
		}
	})
}

// TestBudgetWindowSlides: first attempts older than the window no longer
// earn retries. (Batches of depositBatch are put in the window at once.)
func TestBudgetWindowSlides(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := NewBudget(1.0/8, 0)
		deposits(b, depositBatch) // 8 retries' worth
		time.Sleep(4 * time.Second)
		deposits(b, depositBatch)
		time.Sleep(4 * time.Second)
		if got := grants(b, 4); got != 4 {
			t.Fatalf("granted %d, want 4", got)
		}
		time.Sleep(3 * time.Second) // the first batch has left the window
		if got := grants(b, 100); got != 4 {
			t.Fatalf("granted %d after the first batch expired, want 4", got)
		}
		time.Sleep(time.Minute)
		if got := grants(b, 100); got != 0 {
			t.Fatalf("granted %d after a minute idle, want 0", got)
		}
	})
}

// TestBudgetPartialBatchCountsAtRetry: a batch not yet full is put in the
// window by the next retry, as if its first attempts were made then: late
// by at most the batch, never lost.
func TestBudgetPartialBatchCountsAtRetry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := NewBudget(1, 0)
		deposits(b, 10)
		time.Sleep(time.Hour)
		if got := grants(b, 100); got != 10 {
			t.Fatalf("granted %d, want 10", got)
		}
		time.Sleep(10 * time.Second)
		if got := grants(b, 100); got != 0 {
			t.Fatalf("granted %d once the batch left the window, want 0", got)
		}
	})
}

// TestBudgetAcrossBubbles: a Budget made outside a synctest bubble works in
// one, and one made in a bubble works after it: it starts its window anew.
func TestBudgetAcrossBubbles(t *testing.T) {
	outside := NewBudget(1, 0)
	deposits(outside, 3)
	var inside *Budget
	synctest.Test(t, func(t *testing.T) {
		deposits(outside, 3)
		if got := grants(outside, 100); got > 6 {
			t.Fatalf("granted %d, want at most 6", got)
		}
		inside = NewBudget(1, 0)
		deposits(inside, 3)
		if got := grants(inside, 100); got != 3 {
			t.Fatalf("granted %d inside, want 3", got)
		}
	})
	deposits(inside, 2)
	if got := grants(inside, 100); got != 2 {
		t.Fatalf("granted %d after the bubble, want 2", got)
	}
	deposits(outside, 2)
	if got := grants(outside, 100); got != 2 {
		t.Fatalf("granted %d outside again, want 2", got)
	}
}

// TestBudgetFirstAttemptsNeverRefused: a spent budget still lets every
// first attempt run; only retries are refused.
func TestBudgetFirstAttemptsNeverRefused(t *testing.T) {
	b := NewBudget(0, 0)
	calls := 0
	for range 100 {
		err := Policy{NoDelay: true, Budget: b}.Execute(context.Background(), func(context.Context) error {
			calls++
			return errBudget
		})
		var rerr *Error
		if !errors.As(err, &rerr) || rerr.Reason != BudgetSpent || rerr.Attempts != 1 {
			t.Fatalf("Execute = %v, want a *Error of BudgetSpent after 1 attempt", err)
		}
	}
	if calls != 100 {
		t.Fatalf("%d first attempts ran, want 100", calls)
	}
}

// TestBudgetCapsRetryStorm: when the dependency is down, callers sharing a
// budget make at most ratio × their calls in retries, plus the reserve.
func TestBudgetCapsRetryStorm(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := NewBudget(0.2, 1)
		p := Policy{MaxAttempts: 5, InitialDelay: time.Millisecond, Budget: b}
		var mu sync.Mutex
		calls := 0
		var wg sync.WaitGroup
		for range 100 {
			wg.Go(func() {
				_ = p.Execute(context.Background(), func(context.Context) error {
					mu.Lock()
					calls++
					mu.Unlock()
					return errBudget
				})
			})
		}
		wg.Wait()
		// 100 first attempts: at most 0.2 × 100 + 10 retries.
		if calls > 100+30 {
			t.Fatalf("%d attempts for 100 calls, want at most 130", calls)
		}
		if calls < 100+30 {
			t.Fatalf("%d attempts for 100 calls, want the budget used up, 130", calls)
		}
	})
}

// TestBudgetDepositReadsNoClockPerCall: first attempts are counted in
// batches, the batch put in the window when it is full or a retry asks.
func TestBudgetDepositBatches(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := NewBudget(1, 0)
		deposits(b, depositBatch-1)
		if got := b.pending.Load(); got != depositBatch-1 {
			t.Fatalf("pending = %d, want %d", got, depositBatch-1)
		}
		b.deposit()
		if got := b.pending.Load(); got != 0 {
			t.Fatalf("pending after a full batch = %d, want 0", got)
		}
		if got := b.buckets[slot(b.cur)].first; got != depositBatch {
			t.Fatalf("bucket holds %d first attempts, want %d", got, depositBatch)
		}
	})
}

func TestSecondAndSlot(t *testing.T) {
	for _, c := range []struct {
		ns, sec int64
		slot    int
	}{
		{0, 0, 0}, {999_999_999, 0, 0}, {1e9, 1, 1}, {-1, -1, 9}, {-1e9, -1, 9}, {-1e9 - 1, -2, 8}, {25e9, 25, 5},
	} {
		if got := second(c.ns); got != c.sec {
			t.Errorf("second(%d) = %d, want %d", c.ns, got, c.sec)
		}
		if got := slot(second(c.ns)); got != c.slot {
			t.Errorf("slot(second(%d)) = %d, want %d", c.ns, got, c.slot)
		}
	}
}
