module github.com/ctxsync/ctxsync/redissync

go 1.25

require (
	github.com/alicebob/miniredis/v2 v2.40.0
	github.com/ctxsync/ctxsync v0.1.0
	github.com/redis/go-redis/v9 v9.22.0
	go.uber.org/goleak v1.3.0
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/yuin/gopher-lua v1.1.1 // indirect
	go.uber.org/atomic v1.11.0 // indirect
	golang.org/x/sys v0.30.0 // indirect
)
