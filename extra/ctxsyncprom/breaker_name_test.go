package ctxsyncprom_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/ctxsync/ctxsync/breaker"
	"github.com/ctxsync/ctxsync/extra/ctxsyncprom"
)

// TestAddBreakerTakesItsOwnName: an empty name means the breaker's own
// Settings.Name, so that a name is written once (AddBreaker read only its
// argument, and a user wrote the name twice); a second breaker of the same
// name is a duplicate, found as for names given.
func TestAddBreakerTakesItsOwnName(t *testing.T) {
	c := ctxsyncprom.NewCollector(ctxsyncprom.Config{})
	if err := c.AddBreaker("", breaker.New(breaker.Settings{Name: "payments"})); err != nil {
		t.Fatal(err)
	}
	want := `
# HELP ctxsync_breaker_disabled 1 if the breaker is disabled: it lets every call through.
# TYPE ctxsync_breaker_disabled gauge
ctxsync_breaker_disabled{name="payments"} 0
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), "ctxsync_breaker_disabled"); err != nil {
		t.Error(err)
	}
	err := c.AddBreaker("payments", breaker.New(breaker.Settings{}))
	if !errors.Is(err, ctxsyncprom.ErrDuplicateName) {
		t.Errorf("AddBreaker of a second %q = %v, want ErrDuplicateName", "payments", err)
	}
}
