// Command adaptive-limit puts an HTTP handler behind adaptive.Middleware and
// sends it more requests than its backend can take once the backend loses
// three quarters of its capacity. The limit follows the capacity down, the
// requests past it are answered 503 at once instead of queueing in the
// backend, and the limit climbs back when the capacity returns.
//
// The backend holds up to its capacity of requests for 20ms each, and queues
// the rest in order: with 40 places it serves 2,000 requests a second, with 10
// only 500. Requests come at 1,000 a second for 6 s; at 2 s the capacity drops
// to 10, and at 4 s it is back to 40.
//
// The run is a simulation in virtual time, so that it prints the same thing
// every time and takes no time: the driver below plays the clock, the
// arrivals and the backend, and calls the server's handler as net/http would,
// one goroutine per request. The Limiter reads the driver's clock through
// Config.Clock. In a real server, leave Clock unset and serve the handler
// with http.ListenAndServe.
package main

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"time"

	"github.com/ctxsync/ctxsync/adaptive"
)

func main() { run(os.Stdout) }

const (
	serviceTime = 20 * time.Millisecond
	arrivals    = time.Millisecond // one request each
	runFor      = 6 * time.Second
	report      = 250 * time.Millisecond
)

// capacityAt is how many requests the backend serves at once at time t.
func capacityAt(t time.Duration) int {
	if t >= 2*time.Second && t < 4*time.Second {
		return 10
	}
	return 40
}

// A job is a request inside the backend: its handler waits on done.
type job struct {
	done chan struct{}
	end  time.Duration // when the backend finishes it, once started
}

// request is one request's handler goroutine, as seen by the driver: finished
// receives the response once ServeHTTP has returned.
type request struct {
	finished chan *httptest.ResponseRecorder
}

// backend is the handler behind the middleware. Each request tells the driver
// it arrived, and waits until the driver says the backend is done with it.
type backend struct{ arrived chan *job }

func (b *backend) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	j := &job{done: make(chan struct{})}
	b.arrived <- j
	<-j.done
	fmt.Fprintln(w, "ok")
}

func run(w io.Writer) {
	var (
		mu  sync.Mutex
		now time.Duration // the driver's clock
	)
	clock := func() time.Duration { mu.Lock(); defer mu.Unlock(); return now }
	setClock := func(t time.Duration) { mu.Lock(); now = t; mu.Unlock() }

	// MaxWait NoWait: a request finds room under the limit at once or is
	// answered 503; none waits in front of the backend.
	lim := adaptive.New(adaptive.Config{MaxWait: adaptive.NoWait, Clock: clock})
	back := &backend{arrived: make(chan *job)}
	handler := adaptive.Middleware(lim)(back)

	var (
		running  []*job // in the backend's places, oldest first
		queued   []*job // waiting for a place, oldest first
		waiters  = map[*job]*request{}
		ok, shed int
	)
	// start gives free places to the jobs queued, at time t.
	start := func(t time.Duration) {
		for len(running) < capacityAt(t) && len(queued) > 0 {
			j := queued[0]
			queued = queued[1:]
			j.end = t + serviceTime
			running = append(running, j)
		}
	}
	// finish ends the jobs whose time is up by t, oldest first: each
	// handler returns and its Ticket is finished, at the job's end.
	finish := func(t time.Duration) {
		for len(running) > 0 && running[0].end <= t {
			j := running[0]
			running = running[1:]
			setClock(j.end)
			close(j.done)
			if (<-waiters[j].finished).Code == http.StatusOK {
				ok++
			}
			delete(waiters, j)
			start(j.end)
		}
	}

	fmt.Fprintln(w, "   time  capacity  limit  in flight  served  shed")
	for t := time.Duration(0); t < runFor; t += arrivals {
		finish(t)
		setClock(t)
		start(t) // a capacity that came back
		if t%report == 0 {
			fmt.Fprintf(w, "%6.2fs %9d %6d %10d %7d %5d\n", t.Seconds(), capacityAt(t), lim.Limit(), lim.InFlight(), ok, lim.Shed())
		}

		// A request arrives: its handler runs in a goroutine of its own.
		r := &request{finished: make(chan *httptest.ResponseRecorder, 1)}
		go func() {
			rec := httptest.NewRecorder()
			handler.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
			r.finished <- rec
		}()
		select {
		case j := <-back.arrived:
			waiters[j] = r
			queued = append(queued, j)
			start(t)
		case rec := <-r.finished:
			if rec.Code != http.StatusServiceUnavailable {
				break
			}
			if shed++; shed == 1 {
				fmt.Fprintf(w, "%6.2fs the first 503, with Retry-After: %s\n", t.Seconds(), rec.Header().Get("Retry-After"))
			}
		}
	}
	finish(runFor + time.Hour)
	fmt.Fprintf(w, "served %d, shed %d (503 at once), limit %d\n", ok, shed, lim.Limit())
}
