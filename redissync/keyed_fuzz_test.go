package redissync

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
)

// FuzzKeyed runs TryAcquire, Release and failed calls of two Keyeds (two
// processes) over four keys against a model: who holds each key's permits.
// Each step checks the answer, each Keyed's Len, and that a key's tokens
// grow (each key's counter is dropped now and then, as when it expires).
func FuzzKeyed(f *testing.F) {
	f.Add([]byte{0, 1, 4, 5, 16, 17, 2, 3, 0x40, 0x44})
	f.Add([]byte{0, 0, 0, 1, 1, 1, 0x80, 0, 0xc3})
	// A key granted, given back and its counter dropped, again and again,
	// each within a millisecond or so: the counter made again must start
	// past the last token (odd and even lengths: N of 2 and of 1).
	drops := []byte{0x00, 0x02, 0x83, 0x10, 0x12, 0x83, 0x00, 0x02, 0x83, 0x10, 0x12, 0x83}
	f.Add(append(append(append([]byte{}, drops...), drops...), drops...))
	f.Add(append(append(append([]byte{}, drops...), drops...), append(drops, 0x00)...))
	f.Fuzz(func(t *testing.T, ops []byte) {
		if len(ops) > 64 {
			ops = ops[:64]
		}
		srv := miniredis.RunT(t)
		c := redis.NewClient(&redis.Options{Addr: srv.Addr(), MaxRetries: -1})
		defer c.Close()
		ctx := context.Background()
		done, cancel := context.WithCancel(ctx)
		cancel()
		n := 1 + int(len(ops)%2)
		var ks [2]*Keyed
		for i := range ks {
			var err error
			if ks[i], err = NewKeyed(Config{Client: c, Name: "fuzz", N: n, Lease: time.Hour}); err != nil {
				t.Fatal(err)
			}
		}
		keys := []string{"a", "b", "{c}:\xff", ""}
		held := map[string][]*Permit{} // key -> permits held, in order
		owner := map[*Permit]int{}     // permit -> the Keyed that holds it
		last := map[string]int64{}     // key -> highest token
		for _, op := range ops {
			key := keys[op>>2&3]
			who := int(op >> 4 & 1)
			switch op & 3 {
			case 0, 1: // TryAcquire
				p, err := ks[who].TryAcquire(ctx, key)
				free := len(held[key]) < n
				switch {
				case free && err != nil:
					t.Fatalf("TryAcquire(%q) with %d of %d held: %v", key, len(held[key]), n, err)
				case !free && !errors.Is(err, ErrWouldWait):
					t.Fatalf("TryAcquire(%q) with all held: %v, %v", key, p, err)
				case free:
					if p.Token() <= last[key] {
						t.Fatalf("key %q: token %d after %d", key, p.Token(), last[key])
					}
					last[key] = p.Token()
					held[key] = append(held[key], p)
					owner[p] = who
				}
			case 2: // Release the first permit held of key
				if len(held[key]) == 0 {
					continue
				}
				p := held[key][0]
				held[key] = held[key][1:]
				delete(owner, p)
				if err := p.Release(ctx); err != nil {
					t.Fatal(err)
				}
			case 3: // a call that fails, and a counter dropped
				if op&0x80 != 0 {
					c.Del(ctx, "redissync:{fuzz:"+key+"}:seq")
				}
				if p, err := ks[who].Acquire(done, key); p != nil || err != context.Canceled {
					t.Fatalf("Acquire with a done ctx: %v, %v", p, err)
				}
			}
			var want [2]int
			for _, w := range []int{0, 1} {
				seen := map[string]bool{}
				for key, ps := range held {
					for _, p := range ps {
						if owner[p] == w && !seen[key] {
							seen[key] = true
							want[w]++
						}
					}
				}
				if got := ks[w].Len(); got != want[w] {
					t.Fatalf("Keyed %d: Len %d, want %d", w, got, want[w])
				}
			}
		}
		for _, ps := range held {
			for _, p := range ps {
				if err := p.Release(ctx); err != nil {
					t.Fatal(err)
				}
			}
		}
		if ks[0].Len()+ks[1].Len() != 0 {
			t.Fatal("keys kept after every Release")
		}
	})
}
