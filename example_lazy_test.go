package ctxsync_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/ctxsync/ctxsync"
)

// A Lazy makes a value on first use. A failure is not kept: the next Get
// tries again, and once made, the value is kept for good.
func ExampleLazy() {
	attempts := 0
	conn := ctxsync.NewLazy(func(ctx context.Context) (string, error) {
		attempts++
		if attempts == 1 {
			return "", errors.New("database not ready")
		}
		return fmt.Sprintf("connection #%d", attempts), nil
	})

	for range 3 {
		v, err := conn.Get(context.Background())
		fmt.Printf("Get: %q, %v\n", v, err)
	}
	fmt.Println("attempts:", attempts)
	// Output:
	// Get: "", database not ready
	// Get: "connection #2", <nil>
	// Get: "connection #2", <nil>
	// attempts: 2
}

// Peek tells whether the value is made, without waiting or making it.
func ExampleLazy_Peek() {
	l := ctxsync.NewLazy(func(context.Context) (int, error) { return 42, nil })
	v, ok := l.Peek()
	fmt.Println(v, ok)
	l.Get(context.Background())
	v, ok = l.Peek()
	fmt.Println(v, ok)
	// Output:
	// 0 false
	// 42 true
}

func ExampleNewLazy() {
	settings := ctxsync.NewLazy(func(ctx context.Context) (map[string]string, error) {
		return map[string]string{"region": "eu-west-1"}, nil // read a file, call a service...
	})
	s, err := settings.Get(context.Background())
	fmt.Println(s["region"], err)
	// Output: eu-west-1 <nil>
}
