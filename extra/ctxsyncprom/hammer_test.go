package ctxsyncprom_test

import (
	"context"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/ctxsync/ctxsync"
	"github.com/ctxsync/ctxsync/breaker"
	"github.com/ctxsync/ctxsync/extra/ctxsyncprom"
	"github.com/ctxsync/ctxsync/pool"
)

// hammerRounds scales the hammer: CTXSYNC_HAMMER=10 runs ten times as many
// rounds, as in the library's own hammers.
func hammerRounds(base int) int {
	if v, err := strconv.Atoi(os.Getenv("CTXSYNC_HAMMER")); err == nil && v > 0 {
		return base * v
	}
	return base
}

// TestHammer: goroutines hammer a pool and a breaker, with contexts cancelled
// at random, while others scrape, and add and remove sources, all at once.
// Every scrape succeeds and sees no counter go down; at the end the
// histograms have counted exactly the events that hooks of our own, joined
// beside theirs, counted, and agree with the snapshots.
func TestHammer(t *testing.T) {
	rounds := hammerRounds(300)
	c := ctxsyncprom.NewCollector(ctxsyncprom.Config{})
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)

	var waited, creates atomic.Int64
	// Named once, in their Config and Settings: the hooks and the Adds
	// read the names from the events and the sources.
	p, err := pool.New(pool.Config[int]{
		Name: "db",
		New: func(context.Context) (int, error) {
			if rand.IntN(10) == 0 {
				return 0, errDown
			}
			time.Sleep(time.Duration(rand.IntN(100)) * time.Microsecond)
			return 1, nil
		},
		MaxSize: 3,
		Hooks: ctxsyncprom.JoinPoolHooks(c.PoolHooks(""), pool.Hooks{
			OnAcquire: func(e pool.AcquireEvent) {
				if e.Waited {
					waited.Add(1)
				}
			},
			OnCreate: func(pool.CreateEvent) { creates.Add(1) },
		}),
	})
	if err != nil {
		t.Fatal(err)
	}
	var calls [5]atomic.Int64 // by breaker.Outcome
	b := breaker.New(breaker.Settings{
		Name:             "api",
		FailureThreshold: 2,
		OpenTimeout:      time.Millisecond,
		OnCall: ctxsyncprom.JoinOnCall(c.BreakerOnCall(""), func(e breaker.CallEvent) {
			calls[e.Outcome].Add(1)
		}),
	})
	if err := c.AddPool("", p); err != nil {
		t.Fatal(err)
	}
	if err := c.AddBreaker("", b); err != nil {
		t.Fatal(err)
	}

	stop := make(chan struct{})
	var side sync.WaitGroup
	for range 2 {
		side.Go(func() {
			last := map[string]float64{}
			for {
				select {
				case <-stop:
					return
				default:
				}
				mfs, err := reg.Gather()
				if err != nil {
					t.Errorf("Gather: %v", err)
					return
				}
				for _, mf := range mfs {
					if mf.GetType() != dto.MetricType_COUNTER {
						continue
					}
					for _, m := range mf.Metric {
						key := mf.GetName() + labelsKey(m)
						v := m.GetCounter().GetValue()
						if v < last[key] {
							t.Errorf("%s went down from %v to %v", key, last[key], v)
						}
						last[key] = v
					}
				}
			}
		})
	}
	side.Go(func() { // sources come and go
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			_ = c.AddSemaphore("tmp", ctxsync.NewSemaphore(i))
			c.PoolHooks("tmp").OnAcquire(pool.AcquireEvent{Waited: true, Wait: time.Millisecond})
			c.PoolHooks("").OnAcquire(pool.AcquireEvent{Name: "tmp", Waited: true, Wait: time.Millisecond})
			c.Remove("tmp")
		}
	})

	var workers sync.WaitGroup
	for range 6 {
		workers.Go(func() {
			for range rounds {
				ctx, cancel := context.WithTimeout(context.Background(), time.Duration(rand.IntN(300))*time.Microsecond)
				if rand.IntN(4) == 0 {
					cancel() // done before the call, or racing it
				}
				if r, err := p.Acquire(ctx); err == nil {
					if rand.IntN(8) == 0 {
						r.Destroy()
					} else {
						r.Release()
					}
				}
				_ = b.Execute(ctx, func(ctx context.Context) error {
					switch rand.IntN(4) {
					case 0:
						return errDown
					case 1:
						return context.Canceled // ignored
					}
					return nil
				})
				cancel()
			}
		})
	}
	workers.Wait()
	close(stop)
	side.Wait()
	if err := p.Close(context.Background()); err != nil {
		t.Fatal(err)
	}

	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	get := func(name string, labels ...string) *dto.Metric {
		t.Helper()
		for _, mf := range mfs {
			if mf.GetName() != "ctxsync_"+name {
				continue
			}
			for _, m := range mf.Metric {
				if strings.Contains(labelsKey(m), strings.Join(labels, ",")) {
					return m
				}
			}
		}
		t.Fatalf("no %s%v in the scrape", name, labels)
		return nil
	}
	st := p.Stats()
	for _, check := range []struct {
		what      string
		got, want int64
	}{
		{"acquire wait histogram count", int64(get("pool_acquire_wait_seconds", `name=db`).GetHistogram().GetSampleCount()), waited.Load()},
		{"create histogram count", int64(get("pool_create_duration_seconds", `name=db`).GetHistogram().GetSampleCount()), creates.Load()},
		{"create histogram count against Stats", creates.Load(), st.Created + st.CreateFailures},
		{"acquires_total", int64(get("pool_acquires_total", `name=db`).GetCounter().GetValue()), st.AcquireCount},
		{"resources in use", int64(get("pool_resources", `name=db`, `state=in_use`).GetGauge().GetValue()), 0},
		{"waiters", int64(get("pool_waiters", `name=db`).GetGauge().GetValue()), 0},
		{"success histogram count", int64(get("breaker_call_duration_seconds", `name=api`, `outcome=success`).GetHistogram().GetSampleCount()), calls[breaker.Success].Load()},
		{"failure histogram count", int64(get("breaker_call_duration_seconds", `name=api`, `outcome=failure`).GetHistogram().GetSampleCount()), calls[breaker.Failure].Load()},
		{"ignored histogram count", int64(get("breaker_call_duration_seconds", `name=api`, `outcome=ignored`).GetHistogram().GetSampleCount()), calls[breaker.Ignored].Load()},
		{"calls_total success", int64(get("breaker_calls_total", `name=api`, `outcome=success`).GetCounter().GetValue()), calls[breaker.Success].Load()},
		{"calls_total failure", int64(get("breaker_calls_total", `name=api`, `outcome=failure`).GetCounter().GetValue()), calls[breaker.Failure].Load()},
		{"calls_total ignored", int64(get("breaker_calls_total", `name=api`, `outcome=ignored`).GetCounter().GetValue()), calls[breaker.Ignored].Load()},
		{"calls_total rejected", int64(get("breaker_calls_total", `name=api`, `outcome=rejected`).GetCounter().GetValue()), calls[breaker.Rejected].Load()},
	} {
		if check.got != check.want {
			t.Errorf("%s = %d, want %d", check.what, check.got, check.want)
		}
	}
	if waited.Load() == 0 || calls[breaker.Rejected].Load() == 0 {
		t.Logf("the hammer made no wait (%d) or no refusal (%d): raise CTXSYNC_HAMMER", waited.Load(), calls[breaker.Rejected].Load())
	}
	if strings.Contains(scrapeText(t, c, "ctxsync_semaphore_available"), "tmp") {
		t.Error("a source removed is still scraped")
	}
}

// labelsKey returns m's labels as name=value,...
func labelsKey(m *dto.Metric) string {
	var b strings.Builder
	for _, l := range m.GetLabel() {
		b.WriteString(l.GetName() + "=" + l.GetValue() + ",")
	}
	return b.String()
}
