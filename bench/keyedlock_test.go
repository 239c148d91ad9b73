package bench

import (
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/ctxsync/ctxsync"
)

// refMutexMap is the per-key lock users write by hand today: a map of
// refcounted mutexes behind one mutex, each entry dropped when its last user
// leaves (without the refcount the map never shrinks: kubernetes#66442).
type refMutexMap struct {
	mu sync.Mutex
	m  map[string]*refMutex
}

type refMutex struct {
	sync.Mutex
	refs int // guarded by refMutexMap.mu
}

func (r *refMutexMap) Lock(key string) {
	r.mu.Lock()
	if r.m == nil {
		r.m = make(map[string]*refMutex)
	}
	e := r.m[key]
	if e == nil {
		e = new(refMutex)
		r.m[key] = e
	}
	e.refs++
	r.mu.Unlock()
	e.Lock()
}

func (r *refMutexMap) Unlock(key string) {
	r.mu.Lock()
	e := r.m[key]
	if e.refs--; e.refs == 0 {
		delete(r.m, key)
	}
	r.mu.Unlock()
	e.Unlock()
}

// keyedKeys are the 1000 keys of the KeyedLock benchmarks, made up front so
// that the loops measure the locks, not strconv.
var keyedKeys = func() []string {
	keys := make([]string, 1000)
	for i := range keys {
		keys[i] = "account-" + strconv.Itoa(i)
	}
	return keys
}()

// BenchmarkKeyedLockSerial: one goroutine locks and unlocks 1000 keys in turn.
func BenchmarkKeyedLockSerial(b *testing.B) {
	b.Run("keys=1000/impl=ctxsync", func(b *testing.B) {
		b.ReportAllocs()
		ctx := benchCtx(b)
		var k ctxsync.KeyedLock[string]
		i := 0
		for b.Loop() {
			key := keyedKeys[i%len(keyedKeys)]
			i++
			must(k.Lock(ctx, key))
			k.Unlock(key)
		}
	})
	b.Run("keys=1000/impl=refmutex-map", func(b *testing.B) {
		b.ReportAllocs()
		var k refMutexMap
		i := 0
		for b.Loop() {
			key := keyedKeys[i%len(keyedKeys)]
			i++
			k.Lock(key)
			k.Unlock(key)
		}
	})
}

// BenchmarkKeyedLockParallel: every processor locks and unlocks keys picked
// from 1000, each goroutine walking them from its own start; two goroutines
// on one key at once wait for each other.
func BenchmarkKeyedLockParallel(b *testing.B) {
	b.Run("keys=1000/impl=ctxsync", func(b *testing.B) {
		b.ReportAllocs()
		var k ctxsync.KeyedLock[string]
		var start atomic.Int64
		b.RunParallel(func(pb *testing.PB) {
			ctx := benchCtx(b)
			i := int(start.Add(7919))
			for pb.Next() {
				key := keyedKeys[i%len(keyedKeys)]
				i++
				must(k.Lock(ctx, key))
				k.Unlock(key)
			}
		})
	})
	b.Run("keys=1000/impl=refmutex-map", func(b *testing.B) {
		b.ReportAllocs()
		var k refMutexMap
		var start atomic.Int64
		b.RunParallel(func(pb *testing.PB) {
			i := int(start.Add(7919))
			for pb.Next() {
				key := keyedKeys[i%len(keyedKeys)]
				i++
				k.Lock(key)
				k.Unlock(key)
			}
		})
	})
}
