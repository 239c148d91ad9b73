package ctxsync_test

import (
	"context"
	"fmt"

	"github.com/ctxsync/ctxsync"
)

// A Weighted shares a budget among requests of different sizes, such as
// megabytes of memory for image decodes.
func ExampleWeighted() {
	budget := ctxsync.NewWeighted(100) // MB
	ctx := context.Background()

	_ = budget.Acquire(ctx, 60) // a large image
	fmt.Println("another 50 MB now?", budget.TryAcquire(50))
	fmt.Println("20 MB now?", budget.TryAcquire(20))
	budget.Release(60)
	budget.Release(20)
	fmt.Println("free:", budget.Available())
	// Output:
	// another 50 MB now? false
	// 20 MB now? true
	// free: 100
}

func ExampleNewWeighted() {
	w := ctxsync.NewWeighted(10)
	fmt.Println(w.Capacity(), w.Available())
	// Output: 10 10
}

// Resize changes the budget at run time. Growing it admits waiters that now
// fit; shrinking it below what is held takes effect as holders release.
func ExampleWeighted_Resize() {
	w := ctxsync.NewWeighted(4)
	ctx := context.Background()
	_ = w.Acquire(ctx, 4)

	done := make(chan struct{})
	go func() {
		_ = w.Acquire(ctx, 2) // waits: nothing free
		close(done)
	}()
	w.Resize(6) // two more units: the waiter gets them
	<-done
	fmt.Println("capacity", w.Capacity(), "free", w.Available())

	w.Resize(3) // below the 6 held
	fmt.Println("capacity", w.Capacity(), "free", w.Available())
	w.Release(6)
	fmt.Println("capacity", w.Capacity(), "free", w.Available())
	// Output:
	// capacity 6 free 0
	// capacity 3 free -3
	// capacity 3 free 3
}
