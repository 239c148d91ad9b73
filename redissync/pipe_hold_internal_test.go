package redissync

import (
	"testing"
	"testing/synctest"
	"time"
)

// TestPipeHoldGivesUpAHungPlace: with a hold, a round trip that never ends
// gives its place up at the hold, so the next script goes at once; when the
// hung round trip ends at last, it frees nothing more (the place is not its
// any more), and a round trip ended in time passes no place on twice.
func TestPipeHoldGivesUpAHungPlace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &pipe{hold: time.Second}
		underway := func() int {
			p.mu.Lock()
			defer p.mu.Unlock()
			return p.underway
		}

		o, hung := p.push(nil, nil)
		if o != nil || hung == nil {
			t.Fatal("the first script did not get the free place")
		}
		if o, pl := p.push(nil, nil); o == nil || pl != nil || !p.drop(o) {
			t.Fatal("a second script went while the only place was taken")
		}
		time.Sleep(time.Second)
		synctest.Wait()
		if n := underway(); n != 0 {
			t.Fatalf("past the hold, %d round trips under way; want the hung one's place given up", n)
		}
		o, next := p.push(nil, nil)
		if o != nil || next == nil {
			t.Fatal("past the hold, a script still queued behind the hung round trip")
		}
		if b, pl := p.ended(hung, nil); b != nil || pl != nil {
			t.Fatal("the hung round trip, ending late, passed a place on")
		}
		if n := underway(); n != 1 {
			t.Fatalf("the hung round trip's late end left %d round trips under way; want 1, the next's", n)
		}
		p.ended(next, nil)
		if n := underway(); n != 0 {
			t.Fatalf("%d round trips under way after every one ended", n)
		}
		// A round trip that ends in time stops its timer: nothing is given
		// up later.
		o, pl := p.push(nil, nil)
		if o != nil {
			t.Fatal("the free place was not taken")
		}
		p.ended(pl, nil)
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if n := underway(); n != 0 {
			t.Fatalf("%d round trips under way after the hold of one ended in time", n)
		}
		if o, pl := p.push(nil, nil); o != nil || pl == nil {
			t.Fatal("the free place was not taken")
		} else {
			p.ended(pl, nil)
		}
	})
}

// TestPipeWithoutHold: a pipe whose client ends its round trips by itself
// starts no timer and allocates no place per round trip, and its places go
// back as the round trips end.
func TestPipeWithoutHold(t *testing.T) {
	p := &pipe{}
	o, pl := p.push(nil, nil)
	if o != nil || pl != nil {
		t.Fatalf("push = %v, %v; want the free place, with nothing to give up", o, pl)
	}
	if o, _ := p.push(nil, nil); o == nil || !p.drop(o) {
		t.Fatal("a second script went while the only place was taken")
	}
	if b, next := p.ended(pl, nil); b != nil || next != nil {
		t.Fatal("a round trip with nothing queued passed its place on")
	}
	if allocs := testing.AllocsPerRun(100, func() {
		_, pl := p.push(nil, nil)
		p.ended(pl, nil)
	}); allocs != 0 {
		t.Errorf("%v allocations per round trip's place; want 0", allocs)
	}
	if p.underway != 0 {
		t.Fatalf("%d round trips under way after every one ended", p.underway)
	}
}
