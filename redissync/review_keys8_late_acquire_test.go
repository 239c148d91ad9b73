package redissync

import (
	"context"
	"testing"
	"time"
)

// A client hook that panics after an Acquire's or TryAcquire's script ran,
// and granted the permit, leaves nothing held: the permit is taken back, and
// the Keyed keeps no key.
func TestKeyedAcquireLateHookPanicKeepsNothing(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			c := b.strictClient(t, true)
			h := &armedHook{late: true, value: errLateHookPanic}
			c.AddHook(h)
			for _, lock := range []bool{false, true} {
				cfg := b.config(c, "keyedlatepanic", 1, time.Minute)
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
					var r any
					func() {
						defer func() { r = recover() }()
						_, _ = acquire()
					}()
					if r != errLateHookPanic {
						t.Fatalf("lock %v: %s panicked with %v; want the hook's panic", lock, name, r)
					}
					if n := k.Len(); n != 0 {
						t.Errorf("lock %v: Keyed.Len() = %d after a %s that panicked; want 0", lock, n, name)
					}
					p, err := k.TryAcquire(ctx, "a")
					if err != nil {
						t.Fatalf("lock %v: TryAcquire after a %s that panicked = %v; want the permit, which nobody holds", lock, name, err)
					}
					if err := p.Release(ctx); err != nil {
						t.Fatal(err)
					}
				}
			}
		})
	}
}
