package ctxsync

import (
	"reflect"
	"testing"
)

// TestPriorityQueueEmbedsNoUnexportedType: go doc shows an embedded field,
// unexported type and all, in a struct whose fields it otherwise hides. The
// queue's core is a named field, which it hides.
func TestPriorityQueueEmbedsNoUnexportedType(t *testing.T) {
	for _, typ := range []reflect.Type{reflect.TypeFor[PriorityQueue[int]](), reflect.TypeFor[Queue[int]]()} {
		for i := range typ.NumField() {
			if f := typ.Field(i); f.Anonymous {
				t.Errorf("%v embeds %v: go doc shows it", typ, f.Type)
			}
		}
	}
}
