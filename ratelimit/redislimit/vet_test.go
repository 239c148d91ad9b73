package redislimit_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync/internal/testutil"
)

// TestVetReportsCopies: go vet's copylocks check reports a copy of a Limiter.
// Config and Handle are plain values, meant to be copied.
func TestVetReportsCopies(t *testing.T) {
	const path = "github.com/ctxsync/ctxsync/ratelimit/redislimit"
	copyable := map[string]bool{path + ".Config": true, path + ".Handle": true}
	copied := testutil.VetCopies(t, "testdata/vetcopy")
	for _, typ := range testutil.StructTypes(t, path, ".") {
		if !copyable[typ] {
			require.True(t, copied[typ], "go vet does not report a copy of %s (or testdata/vetcopy does not copy one)", typ)
		}
	}
}
