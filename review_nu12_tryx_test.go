package ctxsync_test

import (
	"context"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/ctxsync/ctxsync"
)

// TestTryTwinClaim: the package overview and the README promised that "each
// blocking call has a non-blocking TryX twin", and eight do not: Barrier.Wait,
// Condition.Wait and WaitFor, Event.Wait, Flight.Do, Lazy.Get, the queues'
// Join, WaitGroup.Wait and Watch.Wait. A user who looks for TryWait finds
// none. The calls that take something (a lock, a permit, an item) have their
// TryX; the waits for a state have a look that never blocks instead, and the
// docs say which. The test fails while a doc claims a twin for every blocking
// call that lacks one.
func TestTryTwinClaim(t *testing.T) {
	types := []any{
		&ctxsync.Barrier{}, &ctxsync.BoundedSemaphore{}, &ctxsync.Condition{},
		&ctxsync.Event{}, &ctxsync.Flight[int, int]{}, &ctxsync.KeyedLock[int]{},
		&ctxsync.Lazy[int]{}, &ctxsync.Lock{}, &ctxsync.PriorityQueue[int]{},
		&ctxsync.Queue[int]{}, &ctxsync.RWLock{}, &ctxsync.Semaphore{},
		&ctxsync.WaitGroup{}, &ctxsync.Watch[int]{}, &ctxsync.Weighted{},
	}
	ctxType := reflect.TypeFor[context.Context]()
	var without []string
	for _, v := range types {
		rt := reflect.TypeOf(v)
		for i := range rt.NumMethod() {
			m := rt.Method(i)
			if m.Type.NumIn() < 2 || m.Type.In(1) != ctxType || m.Name == "All" || m.Name == "Changes" {
				continue // not a blocking call (All and Changes return iterators)
			}
			if _, ok := rt.MethodByName("Try" + m.Name); !ok {
				without = append(without, rt.Elem().Name()+"."+m.Name)
			}
		}
	}
	if len(without) == 0 {
		return
	}
	for _, f := range []string{"doc.go", "README.md"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		text := strings.Join(strings.Fields(strings.ReplaceAll(string(b), "//", "")), " ")
		for _, claim := range []string{"Each blocking call has a non-blocking TryX twin.", "Every blocking call has a non-blocking `TryX` twin."} {
			if strings.Contains(text, claim) {
				t.Errorf("%s says %q; these have none: %v", f, claim, without)
			}
		}
	}
}
