package ctxsync_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ctxsync/ctxsync"
)

// The tests of this file are Go's own tests of sync.WaitGroup
// (src/sync/waitgroup_test.go), re-expressed against ctxsync.WaitGroup: Wait
// takes a ctx (one that never ends, so that they test what sync's test), and
// the panic messages name our package. Where our contract differs from sync's
// on purpose, the test says so.

// portTwoGroups: n goroutines each count one group down and then wait on a
// second; the second group must hold them all until its counter reaches zero,
// and then release every one.
func portTwoGroups(t *testing.T, wg1, wg2 *ctxsync.WaitGroup) {
	const n = 16
	wg1.Add(n)
	wg2.Add(n)
	exited := make(chan bool, n)
	for range n {
		go func() {
			wg1.Done()
			if err := wg2.Wait(context.Background()); err != nil {
				t.Errorf("Wait = %v, want nil", err)
			}
			exited <- true
		}()
	}
	if err := wg1.Wait(context.Background()); err != nil {
		t.Fatalf("Wait = %v, want nil", err)
	}
	for range n {
		select {
		case <-exited:
			t.Fatal("the WaitGroup released a waiter before its counter reached zero")
		default:
		}
		wg2.Done()
	}
	for range n {
		<-exited // blocks, and the test times out, if a waiter is never released
	}
}

func TestPortWaitGroup(t *testing.T) {
	wg1, wg2 := new(ctxsync.WaitGroup), new(ctxsync.WaitGroup)
	// The same groups, round after round: each round must leave them ready
	// for the next.
	for range 8 {
		portTwoGroups(t, wg1, wg2)
	}
}

func TestPortWaitGroupMisuse(t *testing.T) {
	defer func() {
		if v := recover(); v != "ctxsync: negative WaitGroup counter" {
			t.Fatalf("panic = %#v, want ctxsync: negative WaitGroup counter", v)
		}
	}()
	var wg ctxsync.WaitGroup
	wg.Add(1)
	wg.Done()
	wg.Done()
	t.Fatal("a Done below zero did not panic")
}

// TestPortWaitGroupRace: Wait must not return before both goroutines are
// done (a spurious wake-up).
func TestPortWaitGroupRace(t *testing.T) {
	for range 1000 {
		var wg ctxsync.WaitGroup
		var n atomic.Int32
		wg.Add(1)
		go func() {
			n.Add(1)
			wg.Done()
		}()
		wg.Add(1)
		go func() {
			n.Add(1)
			wg.Done()
		}()
		if err := wg.Wait(context.Background()); err != nil {
			t.Fatalf("Wait = %v, want nil", err)
		}
		if got := n.Load(); got != 2 {
			t.Fatalf("Wait returned with %d of 2 goroutines done: a spurious wake-up", got)
		}
	}
}

// TestPortWaitGroupAlign: a WaitGroup after a byte in a struct works (its
// 64-bit atomic word must be aligned on 32-bit platforms too).
func TestPortWaitGroupAlign(t *testing.T) {
	type X struct {
		_  byte // a byte first: wg must still get the alignment its atomic word needs
		wg ctxsync.WaitGroup
	}
	var x X
	x.wg.Add(1)
	go func(x *X) { x.wg.Done() }(&x)
	if err := x.wg.Wait(context.Background()); err != nil {
		t.Fatalf("Wait = %v, want nil", err)
	}
}

func TestPortWaitGroupGo(t *testing.T) {
	var wg ctxsync.WaitGroup
	var i int
	wg.Go(func() { i++ })
	if err := wg.Wait(context.Background()); err != nil {
		t.Fatalf("Wait = %v, want nil", err)
	}
	if i != 1 {
		t.Fatalf("got %d, want 1", i)
	}
}

// TestPortGoPanicDoesNotReleaseWait is Go's TestIssue76126 (golang/go#76126):
// a panic in a function started by Go ends the process, and Wait must not
// return meanwhile, or the program could carry on, or exit with status 0,
// before the panic is reported. It runs itself in a child process.
func TestPortGoPanicDoesNotReleaseWait(t *testing.T) {
	if os.Getenv("CTXSYNC_WAITGROUP_CHILD") != "1" {
		if testing.Short() {
			t.Skip("runs the test binary again")
		}
		cmd := exec.Command(os.Args[0], "-test.run=^TestPortGoPanicDoesNotReleaseWait$")
		cmd.Env = append(os.Environ(), "CTXSYNC_WAITGROUP_CHILD=1")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		if err == nil {
			t.Errorf("the child exited with status 0; want the panic to end it")
		}
		if got := stderr.String(); !strings.Contains(got, "panic: test") || strings.Contains(got, "Wait returned") {
			t.Errorf("the child's stderr has no \"panic: test\", or Wait returned:\n%s", got)
		}
		return
	}
	var wg ctxsync.WaitGroup
	wg.Go(func() { panic("test") })
	_ = wg.Wait(context.Background()) // the process ends here
	panic("Wait returned")            // never reached
}

// TestPortWaitGroupAddWhileWaiting: sync.WaitGroup calls an Add with a
// positive delta on a zero counter, concurrent with Wait, misuse ("Add called
// concurrently with Wait" may panic), and a reuse before every Wait returned
// panics too. Our contract differs on purpose: Add may come at any time, and
// the WaitGroup may be reused at once.
func TestPortWaitGroupAddWhileWaiting(t *testing.T) {
	var wg ctxsync.WaitGroup
	for range 100 {
		wg.Add(1)
		done := make(chan error)
		go func() { done <- wg.Wait(context.Background()) }()
		wg.Done()
		wg.Add(1) // at once: the Wait above may or may not have seen the zero
		wg.Done()
		if err := <-done; err != nil {
			t.Fatalf("Wait = %v, want nil", err)
		}
	}
}
