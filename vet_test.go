package ctxsync_test

import (
	"testing"

	"github.com/ctxsync/ctxsync/internal/testutil"
)

// TestVetReportsCopies: go vet's copylocks check reports a copy of every
// exported type of the module, as it does for sync.Mutex, but the plain values
// (settings, snapshots, results). testdata/vetcopy copies one of each; a type
// missing there, or copied without a report, fails.
func TestVetReportsCopies(t *testing.T) {
	const mod = "github.com/ctxsync/ctxsync"
	testutil.VetReportsCopies(t, "testdata/vetcopy", map[string]string{
		mod:                ".",
		mod + "/ratelimit": "ratelimit",
		mod + "/breaker":   "breaker",
		mod + "/pool":      "pool",
		mod + "/group":     "group",
		mod + "/retry":     "retry",
		mod + "/adaptive":  "adaptive",
	}, map[string]bool{
		mod + "/ratelimit.Decision":         true,
		mod + "/ratelimit.KeyedConfig":      true,
		mod + "/ratelimit.MiddlewareConfig": true,
		mod + "/breaker.Counts":             true,
		mod + "/breaker.Metrics":            true,
		mod + "/breaker.OpenError":          true,
		mod + "/breaker.Settings":           true,
		mod + "/pool.Config":                true,
		mod + "/pool.Leak":                  true,
		mod + "/pool.Stats":                 true,
		mod + "/group.Options":              true,
		mod + ".PanicError":                 true, // and group.PanicError, an alias of it
		mod + "/retry.Policy":               true,
		mod + "/retry.Error":                true,
		mod + "/retry.StatusError":          true,
		mod + "/retry.Transport":            true, // its Policy and Base; no state of its own
		mod + "/retry.Hedge":                true, // a plain value; its Budget is shared
		mod + "/ratelimit.Transport":        true, // its fields; no state of its own
		mod + "/ratelimit.DeadlineError":    true,
		mod + "/breaker.StatusError":        true,
		mod + "/breaker.CallEvent":          true,
		mod + "/pool.Hooks":                 true,
		mod + "/pool.AcquireEvent":          true,
		mod + "/pool.CreateEvent":           true,
		mod + "/ratelimit.TallyCounts":      true,
		mod + "/adaptive.Config":            true,
		mod + "/adaptive.Transport":         true, // its fields; no state of its own
		mod + "/adaptive.StatusError":       true,
		mod + "/adaptive.Algorithm":         true,
	})
}
