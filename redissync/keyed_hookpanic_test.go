package redissync

import (
	"context"
	"testing"
	"time"

	"github.com/ctxsync/ctxsync/internal/testutil"
)

// Regression: a client hook that panicked in a Keyed's Acquire or
// TryAcquire reached the caller with what the call left in Redis taken back,
// but the Keyed kept the key's Semaphore for good: Len stayed 1, with
// nobody holding or waiting for the key. Whether the hook panics before the
// script is sent or after it ran and granted the permit, nothing is held
// and no key kept, for the semaphore form and the lock form.
func TestKeyedAcquireHookPanicKeepsNothing(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			for _, late := range []bool{false, true} {
				c := b.strictClient(t, true)
				h := &armedHook{late: late, value: errEarlyHookPanic}
				if late {
					h.value = errLateHookPanic
				}
				c.AddHook(h)
				for _, lock := range []bool{false, true} {
					cfg := b.config(c, "keyedhookpanic", 1, time.Minute)
					newK := NewKeyed
					if lock {
						newK = NewKeyedLock
					}
					k, err := newK(cfg)
					if err != nil {
						t.Fatal(err)
					}
					ctx := context.Background()
					for name, acquire := range map[string]func() (*Permit, error){
						"Acquire":    func() (*Permit, error) { return k.Acquire(ctx, "a") },
						"TryAcquire": func() (*Permit, error) { return k.TryAcquire(ctx, "a") },
					} {
						h.armed.Store(true)
						r := testutil.PanicOf(func() { _, _ = acquire() })
						if r != h.value {
							t.Fatalf("late %v, lock %v: %s panicked with %v; want the hook's panic", late, lock, name, r)
						}
						if n := k.Len(); n != 0 {
							t.Errorf("late %v, lock %v: Keyed.Len() = %d after a %s that panicked; want 0", late, lock, n, name)
						}
						p, err := k.TryAcquire(ctx, "a")
						if err != nil {
							t.Fatalf("late %v, lock %v: TryAcquire after a %s that panicked = %v; want the permit, which nobody holds",
								late, lock, name, err)
						}
						if err := p.Release(ctx); err != nil {
							t.Fatal(err)
						}
						if n := k.Len(); n != 0 {
							t.Errorf("late %v, lock %v: Keyed.Len() = %d after the Release; want 0", late, lock, n)
						}
					}
				}
			}
		})
	}
}
