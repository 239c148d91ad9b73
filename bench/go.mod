module github.com/ctxsync/ctxsync/bench

go 1.25.0

replace (
	github.com/ctxsync/ctxsync => ../
	github.com/ctxsync/ctxsync/extra/ctxsyncotel => ../extra/ctxsyncotel
	github.com/ctxsync/ctxsync/extra/ctxsyncprom => ../extra/ctxsyncprom
	github.com/ctxsync/ctxsync/ratelimit/redislimit => ../ratelimit/redislimit
	github.com/ctxsync/ctxsync/redissync => ../redissync
)

require github.com/ctxsync/ctxsync v0.1.0

require (
	github.com/bsm/redislock v0.9.4
	github.com/cenkalti/backoff/v5 v5.0.3
	github.com/cristalhq/hedgedhttp v0.9.2
	github.com/ctxsync/ctxsync/extra/ctxsyncotel v0.0.0-00010101000000-000000000000
	github.com/ctxsync/ctxsync/extra/ctxsyncprom v0.0.0-00010101000000-000000000000
	github.com/ctxsync/ctxsync/ratelimit/redislimit v0.0.0-00010101000000-000000000000
	github.com/ctxsync/ctxsync/redissync v0.0.0-00010101000000-000000000000
	github.com/failsafe-go/failsafe-go v0.9.8
	github.com/go-redis/redis_rate/v10 v10.0.1
	github.com/go-redsync/redsync/v4 v4.17.0
	github.com/jackc/puddle/v2 v2.2.3
	github.com/prometheus/client_golang v1.24.1
	github.com/redis/go-redis/v9 v9.22.0
	github.com/sethvargo/go-limiter v0.7.1
	github.com/sony/gobreaker/v2 v2.4.0
	github.com/sourcegraph/conc v0.3.0
	go.opentelemetry.io/otel/sdk/metric v1.46.0
	go.uber.org/ratelimit v0.3.1
	golang.org/x/sync v0.22.0
	golang.org/x/time v0.15.0
	gonum.org/v1/plot v0.17.0
)

require (
	github.com/go-logr/logr v1.4.4 // indirect
	github.com/go-logr/stdr v1.2.2 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/influxdata/tdigest v0.0.1 // indirect
	go.opentelemetry.io/auto/sdk v1.2.1 // indirect
	go.opentelemetry.io/otel v1.46.0 // indirect
	go.opentelemetry.io/otel/metric v1.46.0 // indirect
	go.opentelemetry.io/otel/sdk v1.46.0 // indirect
	go.opentelemetry.io/otel/trace v1.46.0 // indirect
)

require (
	codeberg.org/go-fonts/liberation v0.5.0 // indirect
	codeberg.org/go-latex/latex v0.2.0 // indirect
	codeberg.org/go-pdf/fpdf v0.11.1 // indirect
	git.sr.ht/~sbinet/gg v0.7.0 // indirect
	github.com/ajstarks/svgo v0.0.0-20211024235047-1546f124cd8b // indirect
	github.com/benbjohnson/clock v1.3.0 // indirect
	github.com/beorn7/perks v1.0.1 // indirect
	github.com/bits-and-blooms/bitset v1.24.4 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/golang/freetype v0.0.0-20170609003504-e2365dfdc4a0 // indirect
	github.com/munnerz/goautoneg v0.0.0-20191010083416-a7dc8b61c822 // indirect
	github.com/prometheus/client_model v0.6.2
	github.com/prometheus/common v0.70.1 // indirect
	github.com/prometheus/procfs v0.21.1 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	go.uber.org/multierr v1.9.0 // indirect
	golang.org/x/image v0.30.0 // indirect
	golang.org/x/sys v0.47.0 // indirect
	golang.org/x/text v0.40.0 // indirect
	google.golang.org/protobuf v1.36.11 // indirect
)
