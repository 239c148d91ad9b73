package ctxsyncotel_test

import (
	"errors"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/ctxsync/ctxsync"
	"github.com/ctxsync/ctxsync/extra/ctxsyncotel"
)

// FuzzOtelGap15SeriesModel runs a script of Observe calls, Unregisters,
// Observes the Meter refuses or panics in, Stores and collections on two
// series of ObserveSemaphore and one of ObserveWatch, and checks each
// collection against a model: a semaphore series is reported, once, with
// the value of the newest registration in force, and not at all with none;
// the Watch series is reported while a registration is in force, never
// falls, and never counts more than the versions of the Watches observed.
// The callbacks left registered with the Meter are at most those of the
// registrations in force and one per series; none once all ended.
func FuzzOtelGap15SeriesModel(f *testing.F) {
	f.Add([]byte{0, 8, 7, 2, 7, 10, 7, 3, 5, 7, 4, 7})
	f.Add([]byte{0, 0, 0, 7, 2, 7, 6, 7, 14, 7, 2, 2, 7})
	f.Add([]byte{3, 3, 5, 7, 4, 7, 3, 7, 12, 7, 1, 9, 7, 15, 7})
	f.Fuzz(func(t *testing.T, script []byte) {
		if len(script) > 300 {
			script = script[:300]
		}
		runSeriesScript(t, script)
	})
}

type modelReg struct {
	reg   metric.Registration
	value int64
}

type modelWatch struct {
	reg metric.Registration
	w   *ctxsync.Watch[int]
}

func runSeriesScript(t *testing.T, script []byte) {
	r, p, opt := newHookProvider(t)
	names := [2]string{"a", "b"}
	var (
		sems    [2][]modelReg
		watches []modelWatch
		ended   []metric.Registration
		next    int64 = 1
		bound   int64 // the versions of every Watch observed
		counted = map[*ctxsync.Watch[int]]uint64{}
		last    int64
	)
	errNo := errors.New("refused")
	for step, b := range script {
		op, arg := b%8, int(b>>3)
		switch op {
		case 0, 1:
			s := arg % 2
			reg, err := ctxsyncotel.ObserveSemaphore(names[s], ctxsync.NewSemaphore(int(next)), opt)
			if err != nil {
				t.Fatal(err)
			}
			sems[s] = append(sems[s], modelReg{reg, next})
			next++
		case 2:
			s := arg % 2
			if len(sems[s]) == 0 {
				continue
			}
			i := (arg / 2) % len(sems[s])
			if err := sems[s][i].reg.Unregister(); err != nil {
				t.Fatal(err)
			}
			ended = append(ended, sems[s][i].reg)
			sems[s] = append(sems[s][:i], sems[s][i+1:]...)
		case 3:
			w := ctxsync.NewWatch(0)
			for range arg % 4 {
				w.Store(1)
			}
			reg, err := ctxsyncotel.ObserveWatch("w", w, opt)
			if err != nil {
				t.Fatal(err)
			}
			watches = append(watches, modelWatch{reg, w})
		case 4:
			if len(watches) == 0 {
				continue
			}
			i := arg % len(watches)
			if err := watches[i].reg.Unregister(); err != nil {
				t.Fatal(err)
			}
			ended = append(ended, watches[i].reg)
			watches = append(watches[:i], watches[i+1:]...)
		case 5:
			if len(watches) > 0 {
				watches[arg%len(watches)].w.Store(2)
			}
		case 6:
			// An Observe whose callback the Meter refuses, or panics
			// in: the series are as they were.
			s := arg % 2
			if arg/2%2 == 0 {
				p.register = func() error { return errNo }
				if _, err := ctxsyncotel.ObserveSemaphore(names[s], ctxsync.NewSemaphore(1000), opt); !errors.Is(err, errNo) {
					t.Fatalf("step %d: ObserveSemaphore with the callback refused = %v", step, err)
				}
			} else {
				p.register = func() error { panic(meterPanic) }
				mustPanic(t, "ObserveWatch", func() { _, _ = ctxsyncotel.ObserveWatch("w", ctxsync.NewWatch(0), opt) })
			}
		case 7:
			if len(ended) > 0 {
				if err := ended[arg%len(ended)].Unregister(); err != nil {
					t.Fatalf("step %d: a second Unregister: %v", step, err)
				}
			}
			for _, w := range watches {
				v := w.w.Version()
				bound += int64(v - counted[w.w])
				counted[w.w] = v
			}
			c := collect(t, r)
			for s := range 2 {
				set := attribute.NewSet(ctxsyncotel.SemaphoreNameKey.String(names[s]))
				got, ok := exactPoint(c, "ctxsync.semaphore.available", set)
				if len(sems[s]) == 0 {
					if ok {
						t.Fatalf("step %d: series %s reported (%d) with no registration in force", step, names[s], got)
					}
					continue
				}
				if want := sems[s][len(sems[s])-1].value; !ok || got != want {
					t.Fatalf("step %d: series %s: %d (reported %v), want %d, the newest registration's", step, names[s], got, ok, want)
				}
			}
			got, ok := exactPoint(c, "ctxsync.watch.version", attribute.NewSet(ctxsyncotel.WatchNameKey.String("w")))
			switch {
			case ok != (len(watches) > 0):
				t.Fatalf("step %d: ctxsync.watch.version reported %v, with %d registrations in force", step, ok, len(watches))
			case ok && (got < last || got > bound):
				t.Fatalf("step %d: ctxsync.watch.version = %d after %d, want from %d to %d", step, got, last, last, bound)
			case ok:
				last = got
			}
			if n, most := p.callbacks(), len(sems[0])+len(sems[1])+len(watches)+3; n > most {
				t.Fatalf("step %d: %d callbacks registered with the Meter, want at most %d", step, n, most)
			}
		}
	}
	for s := range 2 {
		for _, m := range sems[s] {
			_ = m.reg.Unregister()
		}
	}
	for _, w := range watches {
		_ = w.reg.Unregister()
	}
	if n := p.callbacks(); n != 0 {
		t.Errorf("%d callbacks left registered with the Meter after every Unregister", n)
	}
	c := collect(t, r)
	if n := c.points("ctxsync.semaphore.available") + c.points("ctxsync.watch.version"); n != 0 {
		t.Errorf("%d points after every Unregister, want none", n)
	}
}
