package retry

import (
	"math"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ctxsync/ctxsync/internal/clock"
)

// budgetModel is a Budget as a plain map of seconds: the first attempts and
// retries of each, the window the last budgetBuckets of them, and the first
// attempts not yet in a second, put there in batches of depositBatch or by a
// withdrawal, as Budget does.
type budgetModel struct {
	ratio, reserve float64
	pending        int64
	first, retries map[int64]int64
}

func (m *budgetModel) flush(now int64) {
	s := second(now)
	for k := range m.first {
		if k <= s-budgetBuckets {
			delete(m.first, k)
		}
	}
	for k := range m.retries {
		if k <= s-budgetBuckets {
			delete(m.retries, k)
		}
	}
	m.first[s] += m.pending
	m.pending = 0
}

func (m *budgetModel) withdraw(now int64) bool {
	m.flush(now)
	var first, retries int64
	for _, n := range m.first {
		first += n
	}
	for _, n := range m.retries {
		retries += n
	}
	if float64(retries+1) > m.ratio*float64(max(first, 0))+m.reserve {
		return false
	}
	m.retries[second(now)]++
	return true
}

// FuzzBudgetModel: deposits, deposits taken back, withdrawals and waits of
// a quarter second to seven seconds, on a Budget of extreme or plain ratio
// and reserve, agree with the model at every withdrawal.
func FuzzBudgetModel(f *testing.F) {
	f.Add([]byte{3, 4, 0, 0, 0, 2, 2, 2, 1, 2, 3, 9, 2})
	f.Add([]byte{1, 0, 0, 1, 1, 2, 3, 30, 2, 0, 2})
	f.Add([]byte{7, 7, 2, 2, 2, 2, 1, 1, 2})
	f.Add([]byte{4, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 3, 40, 1, 1, 2, 2, 2})
	vals := []float64{0, math.SmallestNonzeroFloat64, 0.05, 0.1, 0.5, 1, 1e300, math.MaxFloat64}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < 2 {
			return
		}
		ratio, min := vals[int(data[0])%len(vals)], vals[int(data[1])%len(vals)]
		data = data[2:]
		synctest.Test(t, func(t *testing.T) {
			b := NewBudget(ratio, min)
			m := &budgetModel{ratio: ratio, reserve: min * budgetBuckets, first: map[int64]int64{}, retries: map[int64]int64{}}
			for i := 0; i < len(data); i++ {
				switch data[i] % 4 {
				case 0:
					// 64 deposits in a run, the batch size, now and then.
					n := 1
					if data[i]%8 == 4 {
						n = depositBatch
					}
					for range n {
						b.deposit()
						if m.pending++; m.pending%depositBatch == 0 {
							m.flush(clock.Now())
						}
					}
				case 1:
					b.undeposit()
					m.pending--
				case 2:
					now := clock.Now()
					if got, want := b.withdraw(), m.withdraw(now); got != want {
						t.Fatalf("op %d: withdraw = %v, the model says %v (ratio %v, minPerSecond %v)", i, got, want, ratio, min)
					}
				case 3:
					if i+1 < len(data) {
						i++
						time.Sleep(time.Duration(data[i]%29+1) * time.Second / 4)
					}
				}
			}
		})
	})
}
