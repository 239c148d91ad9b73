module github.com/ctxsync/ctxsync/extra/ctxsyncotel

go 1.25

require github.com/ctxsync/ctxsync v0.1.0
