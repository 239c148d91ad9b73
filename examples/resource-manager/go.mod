module github.com/ctxsync/ctxsync/examples/resource-manager

go 1.25.0

require (
	github.com/ctxsync/ctxsync v0.1.0
	github.com/ctxsync/ctxsync/extra/ctxsyncprom v0.1.0
	github.com/prometheus/client_golang v1.24.1
	go.uber.org/goleak v1.3.0
)

require (
	github.com/beorn7/perks v1.0.1 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/munnerz/goautoneg v0.0.0-20191010083416-a7dc8b61c822 // indirect
	github.com/prometheus/client_model v0.6.2 // indirect
	github.com/prometheus/common v0.70.1 // indirect
	github.com/prometheus/procfs v0.21.1 // indirect
	golang.org/x/sys v0.47.0 // indirect
	google.golang.org/protobuf v1.36.11 // indirect
)
