package redissync

import (
	"context"
	"testing"
	"time"
)

// Processes sharing a Name may run different Poll and Lease settings, so
// different key times to live: the one whose waiters came first makes the
// line's keys, and a later grant by a process of a shorter setting must not
// leave the holder's key to expire under that line (a newcomer's SET NX
// would then overtake everyone waiting).

// mixedTTLPair returns two locks of one Name: near with the usual Poll, far
// with a Poll of an hour, whose keys live hours.
func mixedTTLPair(t *testing.T, b backend, name string) (near, far *Semaphore) {
	near = mustNew(t, b.config(b.client(t), name, 1, time.Minute))
	cfg := b.config(b.client(t), name, 1, time.Minute)
	cfg.Poll = time.Hour
	far = mustNew(t, cfg)
	return near, far
}

// TestLockHandoffKeepsHolderKeyPastALongerLine: near's Release hands the
// lock to far's waiter, with near's waiter still in line; the holder's key
// must outlive the line far made.
func TestLockHandoffKeepsHolderKeyPastALongerLine(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			near, far := mixedTTLPair(t, b, "mixedhandoff")
			h := near.newID()
			mustAttempt(t, near, h, "0", false, true)
			fw := far.newID()
			mustAttempt(t, far, fw, far.entryArg, false, false)
			nw := near.newID()
			mustAttempt(t, near, nw, near.entryArg, false, false)
			checkForms(t, near)
			if held, err := near.release(ctx, h); err != nil || !held {
				t.Fatalf("release: %v, %v", held, err)
			}
			checkForms(t, near)
			if v := holderValue(t, near); len(v) <= len(fw) || v[:len(fw)+1] != fw+"@" {
				t.Fatalf("after the hand-over the key is %q; want %s's second form", v, fw)
			}
			for _, id := range []string{fw, nw} {
				if _, err := near.release(ctx, id); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// TestLockClaimKeepsHolderKeyPastALongerLine: near's waiter, handed the
// lock, claims it by asking again (it missed the message), with far's
// waiter still in line; the holder's key must outlive the line far made.
func TestLockClaimKeepsHolderKeyPastALongerLine(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			near, far := mixedTTLPair(t, b, "mixedclaim")
			h := far.newID()
			mustAttempt(t, far, h, "0", false, true)
			nw := near.newID()
			mustAttempt(t, near, nw, near.entryArg, false, false)
			fw := far.newID()
			mustAttempt(t, far, fw, far.entryArg, false, false)
			checkForms(t, near)
			if held, err := far.release(ctx, h); err != nil || !held {
				t.Fatalf("release: %v, %v", held, err)
			}
			checkForms(t, near)
			mustAttempt(t, near, nw, near.entryArg, true, true)
			checkForms(t, near)
			for _, id := range []string{nw, fw} {
				if _, err := near.release(ctx, id); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}
