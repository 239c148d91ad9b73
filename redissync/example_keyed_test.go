package redissync_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/ctxsync/ctxsync/redissync"
)

// A lock per account across a fleet: every instance makes the same Keyed,
// and a transfer locks the account it changes. Accounts nobody is working
// on cost nothing, in the process or (once their leases end) in Redis.
func ExampleKeyed() {
	srv, _ := miniredis.Run() // a real deployment uses its Redis
	srv.ClockTTL(true)
	defer srv.Close()
	client := redis.NewClient(&redis.Options{Addr: srv.Addr(), ContextTimeoutEnabled: true})
	defer client.Close()

	accounts, err := redissync.NewKeyedLock(redissync.Config{
		Client: client,
		Name:   "account",
		Lease:  10 * time.Second,
	})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	transfer := func(account string) error {
		p, err := accounts.Acquire(ctx, account)
		if err != nil {
			return err // ctx ended, or Redis unavailable
		}
		defer p.Release(ctx)
		// Write the account's new balance with p.Token(): the store refuses
		// a token lower than the last it saw for the account.
		return nil
	}
	fmt.Println(transfer("acct-42"), accounts.Len())

	p, _ := accounts.Acquire(ctx, "acct-42")
	_, err = accounts.TryAcquire(ctx, "acct-42") // another instance, say
	fmt.Println(errors.Is(err, redissync.ErrWouldWait), accounts.Len())
	q, _ := accounts.TryAcquire(ctx, "acct-7") // another account is free
	fmt.Println(accounts.Len())
	p.Release(ctx)
	q.Release(ctx)
	fmt.Println(accounts.Len())
	// Output:
	// <nil> 0
	// true 1
	// 2
	// 0
}
