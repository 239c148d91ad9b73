// Command per-account moves money between accounts with a KeyedLock: one lock
// per account, so that transfers that share an account take turns and the
// others run at once, and a transfer that cannot get its accounts before its
// deadline gives up without moving anything.
//
// A transfer locks both of its accounts, always in the same order (by name):
// two transfers that took them in opposite orders could each hold one and wait
// for the other forever. The lock of an account exists only while a transfer
// holds or waits for it: a bank of millions of accounts keeps locks for the few
// in use.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/ctxsync/ctxsync"
)

func main() { run(os.Stdout) }

var errFunds = errors.New("insufficient funds")

// A bank holds balances. The KeyedLock makes each account's read-check-write
// one step; the mutex only guards the map, for an instant at a time.
type bank struct {
	locks ctxsync.KeyedLock[string]

	mu       sync.Mutex
	balances map[string]int // guarded by mu
}

func (b *bank) balance(account string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.balances[account]
}

func (b *bank) add(account string, amount int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.balances[account] += amount
}

// lockBoth locks two accounts in name order, or neither: if ctx ends while it
// waits for the second, it lets the first go.
func (b *bank) lockBoth(ctx context.Context, x, y string) (unlock func(), err error) {
	if y < x {
		x, y = y, x
	}
	if err := b.locks.Lock(ctx, x); err != nil {
		return nil, err
	}
	if err := b.locks.Lock(ctx, y); err != nil {
		b.locks.Unlock(x)
		return nil, err
	}
	return func() { b.locks.Unlock(y); b.locks.Unlock(x) }, nil
}

// transfer moves amount from one account to another. Writing the ledger takes
// 50ms, during which both accounts stay locked.
func (b *bank) transfer(ctx context.Context, from, to string, amount int) error {
	unlock, err := b.lockBoth(ctx, from, to)
	if err != nil {
		return err
	}
	defer unlock()
	if b.balance(from) < amount {
		return errFunds
	}
	time.Sleep(50 * time.Millisecond) // the ledger write
	b.add(from, -amount)
	b.add(to, amount)
	return nil
}

func run(w io.Writer) {
	tl := newTimeline(w, time.Millisecond)
	b := &bank{balances: map[string]int{"alice": 100, "bob": 50, "carol": 80, "dave": 40, "erin": 0}}
	total := func() (sum int) {
		for _, v := range b.balances {
			sum += v
		}
		return sum
	}
	fmt.Fprintln(w, "total before:", total())

	var wg sync.WaitGroup
	// An audit holds carol's account for 300ms.
	wg.Go(func() {
		_ = b.locks.Lock(context.Background(), "carol")
		tl.Printf("audit: carol's account locked for 300ms")
		time.Sleep(300 * time.Millisecond)
		b.locks.Unlock("carol")
		tl.Printf("audit: done")
	})
	transfers := []struct {
		from, to string
		amount   int
		deadline time.Duration
	}{
		{"alice", "bob", 30, time.Second},
		{"bob", "alice", 10, time.Second},              // shares both accounts: waits its turn
		{"dave", "erin", 5, time.Second},               // shares none: runs at once
		{"alice", "carol", 20, 100 * time.Millisecond}, // carol is audited past its deadline
		{"carol", "erin", 15, time.Second},             // waits out the audit
	}
	for i, tr := range transfers {
		time.Sleep(time.Millisecond) // they come in this order, 1ms apart
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), tr.deadline)
			defer cancel()
			what := fmt.Sprintf("#%d %s -> %s %d", i+1, tr.from, tr.to, tr.amount)
			tl.Printf("%s: asked, deadline %v", what, tr.deadline)
			if err := b.transfer(ctx, tr.from, tr.to, tr.amount); err != nil {
				tl.Printf("%s: gave up, nothing moved: %v", what, err)
				return
			}
			tl.Printf("%s: moved", what)
		})
	}
	time.Sleep(200 * time.Millisecond)
	tl.Printf("accounts locked or waited for: %d", b.locks.Len())
	wg.Wait()

	fmt.Fprintln(w, "accounts locked or waited for:", b.locks.Len())
	names := make([]string, 0, len(b.balances))
	for name := range b.balances {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		fmt.Fprintf(w, "  %-5s %3d\n", name, b.balances[name])
	}
	fmt.Fprintln(w, "total after:", total())
}

// A timeline prints the story one line per event, stamped with the time since
// it began, rounded to unit. The example's test runs it in a testing/synctest
// bubble, where time is virtual and the stamps exact. It is safe for
// concurrent use.
type timeline struct {
	mu    sync.Mutex
	w     io.Writer
	start time.Time
	unit  time.Duration
}

func newTimeline(w io.Writer, unit time.Duration) *timeline {
	return &timeline{w: w, start: time.Now(), unit: unit}
}

// Printf prints one line, stamped.
func (t *timeline) Printf(format string, args ...any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	ms := time.Since(t.start).Round(t.unit).Milliseconds()
	fmt.Fprintf(t.w, "[%5dms] %s\n", ms, fmt.Sprintf(format, args...))
}
