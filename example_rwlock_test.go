package ctxsync_test

import (
	"context"
	"fmt"
	"sync"

	"github.com/ctxsync/ctxsync"
)

// An RWLock lets many readers share a cache while a writer replaces it.
func ExampleRWLock() {
	var (
		mu    ctxsync.RWLock // the zero value is ready
		cache = map[string]string{"greeting": "hello"}
		wg    sync.WaitGroup
	)
	for range 4 {
		wg.Go(func() {
			if err := mu.RLock(context.Background()); err != nil {
				return
			}
			defer mu.RUnlock()
			_ = cache["greeting"]
		})
	}
	wg.Wait()

	if err := mu.Lock(context.Background()); err == nil {
		cache["greeting"] = "bonjour"
		mu.Unlock()
	}
	_ = mu.RLock(context.Background())
	fmt.Println(cache["greeting"])
	mu.RUnlock()
	// Output: bonjour
}

func ExampleNewRWLock() {
	rw := ctxsync.NewRWLock()
	fmt.Println(rw.TryRLock(), rw.TryRLock(), rw.TryLock())
	rw.RUnlock()
	rw.RUnlock()
	fmt.Println(rw.TryLock())
	rw.Unlock()
	// Output:
	// true true false
	// true
}
