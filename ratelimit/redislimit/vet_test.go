package redislimit_test

import (
	"testing"

	"github.com/ctxsync/ctxsync/internal/testutil"
)

// TestVetReportsCopies: go vet's copylocks check reports a copy of a Limiter.
// Config and Handle are plain values, meant to be copied.
func TestVetReportsCopies(t *testing.T) {
	const path = "github.com/ctxsync/ctxsync/ratelimit/redislimit"
	testutil.VetReportsCopies(t, "testdata/vetcopy", map[string]string{path: "."},
		map[string]bool{path + ".Config": true, path + ".Handle": true})
}
