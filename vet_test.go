package ctxsync_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ctxsync/ctxsync/internal/testutil"
)

// copyable are the exported struct types that are plain values, meant to be
// copied: settings, snapshots, results.
var copyable = map[string]bool{
	"github.com/ctxsync/ctxsync/ratelimit.Decision":         true,
	"github.com/ctxsync/ctxsync/ratelimit.KeyedOptions":     true,
	"github.com/ctxsync/ctxsync/ratelimit.MiddlewareConfig": true,
	"github.com/ctxsync/ctxsync/breaker.Counts":             true,
	"github.com/ctxsync/ctxsync/breaker.Metrics":            true,
	"github.com/ctxsync/ctxsync/breaker.OpenError":          true,
	"github.com/ctxsync/ctxsync/breaker.Settings":           true,
	"github.com/ctxsync/ctxsync/pool.Config":                true,
	"github.com/ctxsync/ctxsync/pool.Leak":                  true,
	"github.com/ctxsync/ctxsync/pool.Stats":                 true,
}

// TestVetReportsCopies: go vet's copylocks check reports a copy of every other
// exported type of the module, as it does for sync.Mutex. testdata/vetcopy
// copies one of each; a type missing there, or copied without a report, fails.
func TestVetReportsCopies(t *testing.T) {
	copied := testutil.VetCopies(t, "testdata/vetcopy")
	const mod = "github.com/ctxsync/ctxsync"
	for _, dir := range []string{".", "ratelimit", "breaker", "pool"} {
		path := mod
		if dir != "." {
			path += "/" + dir
		}
		for _, typ := range testutil.StructTypes(t, path, dir) {
			if !copyable[typ] {
				require.True(t, copied[typ], "go vet does not report a copy of %s (or testdata/vetcopy does not copy one)", typ)
			}
		}
	}
}
