module github.com/ctxsync/ctxsync/bench

go 1.25.0

replace (
	github.com/ctxsync/ctxsync => ../
	github.com/ctxsync/ctxsync/ratelimit/redislimit => ../ratelimit/redislimit
)

require github.com/ctxsync/ctxsync v0.0.0-00010101000000-000000000000

require (
	github.com/ctxsync/ctxsync/ratelimit/redislimit v0.0.0-00010101000000-000000000000
	github.com/failsafe-go/failsafe-go v0.9.8
	github.com/go-redis/redis_rate/v10 v10.0.1
	github.com/jackc/puddle/v2 v2.2.3
	github.com/redis/go-redis/v9 v9.22.0
	github.com/sethvargo/go-limiter v0.7.1
	github.com/sony/gobreaker/v2 v2.4.0
	go.uber.org/ratelimit v0.3.1
	golang.org/x/sync v0.22.0
	golang.org/x/time v0.15.0
)

require (
	github.com/benbjohnson/clock v1.3.0 // indirect
	github.com/bits-and-blooms/bitset v1.24.4 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	golang.org/x/sys v0.30.0 // indirect
)
