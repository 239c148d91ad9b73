// Command bank shows why a check-then-act on shared state needs a lock: two
// withdrawals of 80 from a balance of 100, made at the same time.
//
// Without a lock, both check the balance before either pays out, and both
// are paid: 160 leaves an account of 100. With a Lock around the check and the
// payment, the second sees the first's payment and is refused.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ctxsync/ctxsync"
)

func main() { run(os.Stdout) }

// account holds a balance. It is atomic only so that the unlocked run below
// is a race of logic, which the example is about, and not a data race.
type account struct{ balance atomic.Int64 }

// withdraw pays out amount if the balance covers it. Between the check and the
// payment the bank consults its fraud service, which takes a moment.
func withdraw(ctx context.Context, a *account, amount int64, mu *ctxsync.Lock) bool {
	if mu != nil {
		if err := mu.Lock(ctx); err != nil {
			return false // the caller gave up waiting
		}
		defer mu.Unlock()
	}
	balance := a.balance.Load()
	if balance < amount {
		return false
	}
	time.Sleep(10 * time.Millisecond) // the fraud check
	a.balance.Store(balance - amount)
	return true
}

func run(w io.Writer) {
	for _, mu := range []*ctxsync.Lock{nil, ctxsync.NewLock()} {
		if mu == nil {
			fmt.Fprintln(w, "Without a lock:")
		} else {
			fmt.Fprintln(w, "With a ctxsync.Lock:")
		}
		var a account
		a.balance.Store(100)
		var paid [2]bool
		var wg sync.WaitGroup
		for i := range paid { // alice, then bob a moment later
			wg.Go(func() { paid[i] = withdraw(context.Background(), &a, 80, mu) })
			time.Sleep(time.Millisecond)
		}
		wg.Wait()
		total := 0
		for i, who := range []string{"alice", "bob"} {
			if paid[i] {
				total += 80
				fmt.Fprintf(w, "  %s withdraws 80: paid\n", who)
			} else {
				fmt.Fprintf(w, "  %s withdraws 80: refused, insufficient funds\n", who)
			}
		}
		fmt.Fprintf(w, "  paid out %d of 100; the balance says %d\n", total, a.balance.Load())
	}
}
