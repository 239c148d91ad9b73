package ctxsync_test

import (
	"context"
	"fmt"
	"sync"

	"github.com/ctxsync/ctxsync"
)

// A KeyedLock serialises the work on each account while different accounts
// proceed in parallel; the lock of an account exists only while it is in use.
func ExampleKeyedLock() {
	var (
		locks    ctxsync.KeyedLock[string] // the zero value is ready to use
		balances = map[string]int{"alice": 100, "bob": 100}
		mu       sync.Mutex // guards the map itself; the KeyedLock guards each balance
		wg       sync.WaitGroup
	)
	deposit := func(ctx context.Context, account string, amount int) error {
		if err := locks.Lock(ctx, account); err != nil {
			return err
		}
		defer locks.Unlock(account)
		mu.Lock()
		b := balances[account]
		mu.Unlock()
		// ... a slow read-modify-write of one account: an HTTP call, a disk write ...
		mu.Lock()
		balances[account] = b + amount
		mu.Unlock()
		return nil
	}
	for range 10 {
		wg.Go(func() { _ = deposit(context.Background(), "alice", 10) })
		wg.Go(func() { _ = deposit(context.Background(), "bob", 5) })
	}
	wg.Wait()
	fmt.Println(balances["alice"], balances["bob"], "locks in use:", locks.Len())
	// Output: 200 150 locks in use: 0
}

// A waiter whose context ends leaves the key's queue with ctx.Err(); the
// holder keeps the key.
func ExampleKeyedLock_Lock() {
	var locks ctxsync.KeyedLock[int]
	_ = locks.Lock(context.Background(), 42) // someone holds key 42

	ctx, cancel := context.WithCancel(context.Background())
	result := make(chan error)
	go func() { result <- locks.Lock(ctx, 42) }()
	cancel()
	fmt.Println(<-result)
	fmt.Println("key 7 is free all the while:", locks.TryLock(7))
	locks.Unlock(7)
	locks.Unlock(42)
	fmt.Println("locks in use:", locks.Len())
	// Output:
	// context canceled
	// key 7 is free all the while: true
	// locks in use: 0
}
