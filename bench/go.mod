module github.com/ctxsync/ctxsync/bench

go 1.25.0

replace github.com/ctxsync/ctxsync => ../

require github.com/ctxsync/ctxsync v0.0.0-00010101000000-000000000000

require golang.org/x/sync v0.22.0
