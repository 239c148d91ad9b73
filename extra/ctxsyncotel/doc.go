// Package ctxsyncotel reports the metrics of ctxsync's pools, breakers,
// limiters and primitives to OpenTelemetry, through the metric API: the
// program chooses the SDK and the exporter.
//
// Each kind has a constructor or an Observe function, whose options choose
// the MeterProvider (WithMeterProvider; the global one by default), add
// attributes (WithAttributes) and set the histograms' buckets
// (WithDurationBuckets). Gauges and counters that a snapshot holds (Stats,
// Metrics, Available...) are read by a callback at each collection,
// registered by Observe and stopped by its registration's Unregister: they
// cost the hot paths nothing. What only an event tells (how long an Acquire
// waited, how long a call took) is fed by hooks that the pool, breaker or
// Tally calls; they allocate nothing, their attributes being made once, and
// take no lock but the SDK's. Each hook constructor takes the user's own
// hook, called after ours, and once even if ours panics.
//
// Names are the user's to choose, in UTF-8 (OTLP carries them as protobuf
// strings, and one that is not UTF-8 would fail a whole export), one per
// pool, breaker, limiter or primitive observed. A primitive observed
// under a name (with the same MeterProvider and attributes) while another's
// registration is in force, one made anew on a reload say, takes the series
// over: the registration made last reports it, alone, until it ends, and
// then the one made before it, if still in force. One callback reports each
// series, reading the source of the newest registration in force; a
// hand-over is one step, which a collection sees whole, and the callback
// changes only while no registration is in force (the SDK registers and
// unregisters callbacks between collections): two registrations are never
// added up, which would show a semaphore of 4 permits with 8 free, and a
// series in force is never missing from a collection.
// Two PoolMetrics, BreakerMetrics or LimiterMetrics of one name each
// report, and the SDK adds them up: make one per name. A pool and a breaker
// carry their own (pool.Config.Name, breaker.Settings.Name): give it there,
// once, and "" to NewPoolMetrics or NewBreakerMetrics, whose hooks then read
// it from each event, and Observe from its source. A name given to them
// wins over the source's own.
//
// The pool's instruments follow the db.client.connection.* semantic
// conventions where they fit (version 1.43.0, whose schema URL the Meter
// carries), with the db.client.connection.pool.name attribute; the others
// are named under ctxsync.*.
//
// # Instruments
//
// Pools (NewPoolMetrics; H: from PoolMetrics.Hooks, O: from
// PoolMetrics.Observe), with db.client.connection.pool.name:
//
//	name                                    kind                 unit           attributes, and what is counted
//	db.client.connection.wait_time          histogram (H)        s              Acquires that waited, failed ones too
//	db.client.connection.create_time        histogram (H)        s              calls to New that made a resource
//	db.client.connection.timeouts           counter (H)          {timeout}      Acquires that failed with context.DeadlineExceeded
//	db.client.connection.count              updowncounter (O)    {connection}   db.client.connection.state=idle|used
//	db.client.connection.max                updowncounter (O)    {connection}   Config.MaxSize
//	db.client.connection.idle.min           updowncounter (O)    {connection}   Config.MinIdle
//	db.client.connection.pending_requests   updowncounter (O)    {request}      Acquires waiting
//	ctxsync.pool.connection.constructing    updowncounter (O)    {connection}   calls to New under way
//	ctxsync.pool.connection.closing         updowncounter (O)    {connection}   calls to Close under way
//	ctxsync.pool.acquires                   counter (O)          {acquire}      Stats.AcquireCount
//	ctxsync.pool.empty_acquires             counter (O)          {acquire}      Stats.EmptyAcquires
//	ctxsync.pool.waits                      counter (O)          {acquire}      Stats.WaitCount
//	ctxsync.pool.canceled_acquires          counter (O)          {acquire}      Stats.CanceledAcquires
//	ctxsync.pool.wait_duration              counter (O)          s              Stats.WaitDuration
//	ctxsync.pool.connection.created         counter (O)          {connection}   Stats.Created
//	ctxsync.pool.connection.create_failures counter (O)          {failure}      Stats.CreateFailures
//	ctxsync.pool.connection.closed          counter (O)          {connection}   ctxsync.pool.close.reason=idle|lifetime|health|destroy|pool
//	ctxsync.pool.connection.close_errors    counter (O)          {error}        Stats.CloseErrors
//
// db.client.connection.use_time is not measured: the pool's hooks do not
// tell how long a resource was out. Nor is db.client.connection.idle.max:
// the pool has no cap on idle resources but MaxSize.
//
// Breakers (NewBreakerMetrics; H: from BreakerMetrics.OnCall and
// OnStateChange, O: from BreakerMetrics.Observe), with ctxsync.breaker.name:
//
//	ctxsync.breaker.call.duration           histogram (H)        s              ctxsync.breaker.outcome=success|failure|ignored: the calls let through
//	ctxsync.breaker.state_changes           counter (H)          {change}       ctxsync.breaker.state: the state entered
//	ctxsync.breaker.calls                   counter (O)          {call}         ctxsync.breaker.outcome=success|failure|ignored|rejected: Metrics().Total
//	ctxsync.breaker.state                   gauge (O)            1              ctxsync.breaker.state=closed|open|half-open: 1 for the current one
//
// Limiters (NewLimiterMetrics; H: from LimiterMetrics.OnWait, O: from
// LimiterMetrics.Observe of a ratelimit.Tally), with ctxsync.ratelimit.name:
//
//	ctxsync.ratelimit.decisions             counter (O)          {decision}     ctxsync.ratelimit.decision=allowed|refused (AllowN, Take)
//	ctxsync.ratelimit.waits                 counter (O)          {wait}         ctxsync.ratelimit.wait=taken|failed (WaitN)
//	ctxsync.ratelimit.wait.duration         histogram (H)        s              ctxsync.ratelimit.wait=taken|failed
//
// Primitives (ObserveSemaphore, ObserveWeighted, ObserveQueue, ObserveLock),
// with ctxsync.semaphore.name, ctxsync.weighted.name, ctxsync.queue.name or
// ctxsync.lock.name:
//
//	ctxsync.semaphore.available             updowncounter (O)    {permit}
//	ctxsync.semaphore.waiting               updowncounter (O)    {waiter}
//	ctxsync.weighted.capacity               updowncounter (O)    {unit}
//	ctxsync.weighted.available              updowncounter (O)    {unit}
//	ctxsync.weighted.waiting                updowncounter (O)    {waiter}
//	ctxsync.queue.length                    updowncounter (O)    {item}
//	ctxsync.queue.unfinished                updowncounter (O)    {item}
//	ctxsync.queue.capacity                  updowncounter (O)    {item}         Cap; 0 if unbounded
//	ctxsync.queue.waiting                   updowncounter (O)    {waiter}       ctxsync.queue.side=get|put: Getters, Putters
//	ctxsync.lock.waiting                    updowncounter (O)    {waiter}
//	ctxsync.lock.held                       gauge (O)            1              Lock and Condition only
//
// The newer primitives (ObserveFlight, ObserveKeyedLock, ObserveWaitGroup,
// ObserveWatch, ObserveAdaptiveLimiter), with ctxsync.flight.name,
// ctxsync.keyedlock.name, ctxsync.waitgroup.name, ctxsync.watch.name or
// ctxsync.adaptive.name:
//
//	ctxsync.flight.calls                    updowncounter (O)    {call}         calls a Do would join
//	ctxsync.keyedlock.keys                  updowncounter (O)    {key}          keys held or waited for
//	ctxsync.waitgroup.count                 updowncounter (O)    {task}
//	ctxsync.watch.version                   counter (O)          {version}      1, plus one per Store
//	ctxsync.adaptive.limit                  updowncounter (O)    {call}
//	ctxsync.adaptive.in_flight              updowncounter (O)    {call}
//	ctxsync.adaptive.waiting                updowncounter (O)    {call}
//	ctxsync.adaptive.shed                   counter (O)          {call}         calls refused with ErrShed
//	ctxsync.adaptive.latency                gauge (O)            s              the baseline latency
//
// Counters read from a snapshot never go down, though what they read may:
// Breaker.Reset zeroes the breaker's Total, and a pool, breaker, Tally,
// Watch or adaptive Limiter observed once an earlier one's registration
// ended (one made anew on a reload) starts from its own counts. The
// counters carry on from where they were, since an observable counter cannot mark a restart with a new
// start time, and a delta reader would get a negative delta: the new
// source's counts add to them, and the counts a breaker made between the
// last collection and its Reset are lost to them (and more, if no count
// fell by the next collection: see BreakerMetrics.Observe). A negative
// count, which only a source of one's own can report, is read as 0, as in
// ctxsyncprom, and a fall to it as a reset. Counters saturate at
// 2^63-1024, the largest float64 below 2^63, through which the SDK sums.
// ObserveWatch and ObserveAdaptiveLimiter, which have no value of the
// user's to keep the counts in, keep those of a name whose registrations
// all ended for a while only, so that ever new names cost no memory for
// good (see ObserveWatch): a reload that observes the new source before it
// unregisters the old carries the counters on in any case.
//
// # Cost
//
// The hooks record only what a snapshot cannot tell, and skip the events
// that take no time: an Acquire served by an idle resource at once, a call
// the breaker refused. What they do record costs what the SDK takes for a
// measurement, about 100 to 200ns here, more with each attribute added by
// WithAttributes. The callbacks run only at collection.
package ctxsyncotel
