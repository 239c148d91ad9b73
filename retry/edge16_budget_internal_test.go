package retry

import (
	"fmt"
	"math"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
)

// TestEdge16NewBudgetExtremes: NewBudget at 0, the tiniest float, 1, huge
// values and math.MaxFloat64, for both arguments. A share or a reserve past
// what a float64 holds saturates (+Inf): every retry is let through, none is
// refused for an overflow, and no NaN appears (ratio multiplies a count of
// first attempts, 0 included, never an infinity). A tiny one lets no
// retry that the other does not. -0 is 0. NaN, ±Inf and negative values
// panic, naming the argument.
func TestEdge16NewBudgetExtremes(t *testing.T) {
	const first, most = 4, 200 // first attempts in the window; retries asked at most
	tiny, huge, maxf := math.SmallestNonzeroFloat64, 1e300, math.MaxFloat64
	negZero := math.Copysign(0, -1)
	for _, c := range []struct {
		ratio, minPerSecond float64
		first               int
		want                int // retries let through, of most
	}{
		{0, 0, first, 0},
		{negZero, negZero, first, 0},
		{tiny, 0, first, 0},
		{0, tiny, first, 0},
		{tiny, tiny, first, 0},
		{1, 0, first, 4},
		{0, 1, first, 10},
		{1, 1, first, 14},
		{0.25, 0.1, first, 2},
		{huge, 0, first, most},
		{maxf, 0, first, most},    // 4 × MaxFloat64 is +Inf
		{maxf, 0, 0, 0},           // no first attempt: the ratio lets none
		{0, huge, 0, most},        // the reserve alone
		{0, maxf, 0, most},        // 10 × MaxFloat64 is +Inf
		{maxf, maxf, first, most}, // +Inf + +Inf
		{maxf, maxf, 0, most},     // 0 × MaxFloat64 + +Inf
		{tiny, maxf, first, most},
		{maxf, tiny, first, most},
	} {
		t.Run(fmt.Sprint(c.ratio, "/", c.minPerSecond, "/", c.first), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b := NewBudget(c.ratio, c.minPerSecond)
				for range c.first {
					b.deposit()
				}
				got := 0
				for range most {
					if b.withdraw() {
						got++
					}
				}
				require.Equal(t, c.want, got)
			})
		})
	}
	for _, v := range []float64{math.NaN(), math.Inf(1), math.Inf(-1), -1, -tiny, -maxf} {
		require.PanicsWithValue(t, "retry: NewBudget ratio must be finite and not negative", func() { NewBudget(v, 1) }, "%v", v)
		require.PanicsWithValue(t, "retry: NewBudget minPerSecond must be finite and not negative", func() { NewBudget(1, v) }, "%v", v)
	}
}

// TestEdge16UndepositAfterWindow: a first attempt taken back (a request
// that met a mistake under retry.Transport) after its deposit has left the
// window, in a batch, leaves the window's count at -1 for a while: counted
// as 0, so that the reserve still lets its retries.
func TestEdge16UndepositAfterWindow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := NewBudget(1, 0.1) // a reserve of one retry
		for range depositBatch {
			b.deposit() // the last puts the batch in the window
		}
		time.Sleep(budgetBuckets * time.Second) // the window has passed
		b.undeposit()
		require.True(t, b.withdraw(), "the reserve's retry")
		require.False(t, b.withdraw())
	})
}
