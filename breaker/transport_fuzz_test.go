package breaker

import (
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"
)

// FuzzTransportHosts runs a script of requests to a few hosts through a
// Transport with a small cap, against a model of the breakers it holds: when
// the cap makes it drop one, the one dropped must be among those the rule
// allows (a closed breaker if any is held, the least recently used of them),
// and the breakers held must be those the model holds. With at most
// hostSample held, every breaker is looked at, so the rule is exact.
//
// Each byte of the script is a request: its low 4 bits pick the host, its
// high bits whether it fails (opening the host's breaker), succeeds, is only
// prechecked, or resets the host's breaker.
func FuzzTransportHosts(f *testing.F) {
	f.Add(uint8(3), []byte{0, 1, 2, 3, 0x41, 4, 5, 0x81, 6, 0xc1, 7})
	f.Add(uint8(1), []byte{0x40, 1, 0x42, 0x43, 0})
	f.Add(uint8(8), []byte("the quick brown fox jumps over the lazy dog"))
	f.Fuzz(func(t *testing.T, maxB uint8, script []byte) {
		maxHosts := int(maxB%hostSample) + 1
		tr := &Transport{
			Base:     &statusBase{},
			MaxHosts: maxHosts,
			Settings: Settings{FailureThreshold: 1, OpenTimeout: time.Hour},
		}
		type entry struct {
			used uint64
		}
		model := map[string]*entry{}
		var tick uint64
		for i, op := range script {
			key := fmt.Sprint("h", op&15)
			kind := op >> 6
			req, _ := http.NewRequest(http.MethodGet, "http://"+key+"/ok", nil)
			switch kind {
			case 2:
				if tr.Precheck(req) != nil && model[key] == nil {
					t.Fatalf("op %d: Precheck refused %s, which has no breaker", i, key)
				}
				continue
			case 3:
				if b := tr.Breaker(key); b != nil {
					b.Reset()
				}
				continue
			case 1:
				req.URL.Path = "/503"
			}
			var allowed []string // the breakers the cap may drop
			if model[key] == nil && len(model) >= maxHosts {
				anyClosed := false
				for k := range model {
					anyClosed = anyClosed || tr.Breaker(k).State() == Closed
				}
				best := uint64(0)
				for k, e := range model {
					if anyClosed && tr.Breaker(k).State() != Closed {
						continue
					}
					switch {
					case allowed == nil || e.used < best:
						allowed, best = []string{k}, e.used
					case e.used == best:
						allowed = append(allowed, k)
					}
				}
			}
			resp, err := tr.RoundTrip(req)
			if err == nil {
				_ = resp.Body.Close()
			}
			if e := model[key]; e != nil {
				e.used = tick
			} else {
				for _, k := range allowed {
					if tr.Breaker(k) == nil {
						delete(model, k)
						allowed = nil
						break
					}
				}
				if allowed != nil {
					t.Fatalf("op %d: a breaker was dropped that was not among %v", i, allowed)
				}
				tick++
				model[key] = &entry{used: tick}
			}
			var held []string
			tr.hosts.mu.Lock()
			for j, e := range tr.hosts.all {
				if e.idx != j {
					t.Fatalf("op %d: entry %s at %d says %d", i, e.key, j, e.idx)
				}
				held = append(held, e.key)
			}
			tr.hosts.mu.Unlock()
			var want []string
			for k := range model {
				want = append(want, k)
			}
			slices.Sort(held)
			slices.Sort(want)
			if !slices.Equal(held, want) || tr.hostsInMap() != len(want) {
				t.Fatalf("op %d: breakers held %v, want %v", i, held, want)
			}
			if len(held) > maxHosts {
				t.Fatalf("op %d: %d breakers held, above %d", i, len(held), maxHosts)
			}
		}
	})
}
