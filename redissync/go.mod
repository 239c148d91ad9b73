module github.com/ctxsync/ctxsync/redissync

go 1.25

require (
	github.com/alicebob/miniredis/v2 v2.40.0
	github.com/ctxsync/ctxsync v0.1.0
	github.com/redis/go-redis/v9 v9.22.0
	go.uber.org/goleak v1.3.0
)
