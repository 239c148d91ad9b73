// Package ctxsyncprom exports the metrics of ctxsync's pools, circuit
// breakers, rate limiters, adaptive limiters, semaphores, queues, Flights,
// KeyedLocks, WaitGroups and Watches to Prometheus, through
// github.com/prometheus/client_golang.
//
// A Collector reads the snapshots of the sources added to it at each scrape,
// as client_golang's DBStatsCollector does for database/sql: nothing is
// counted on the way of an Acquire or a call. Each source is added under a
// name, the value of the "name" label of its series; a name is unique within
// its kind of source (a pool and a breaker may share one). Never add a source
// per key (a limiter per user, say): each name is a set of series kept
// forever, until Remove.
//
// A pool and a breaker carry their own names (pool.Config.Name,
// breaker.Settings.Name): give them there, once, and "" to AddPool,
// AddBreaker, PoolHooks and BreakerOnCall, which then read the name from
// the source or from each event. A name given to them wins over the
// source's own.
//
// Histograms cannot be read from snapshots: hooks feed them. PoolHooks,
// BreakerOnCall and TallyOnWait make the hooks to plug into a pool's
// Config.Hooks, a breaker's Settings.OnCall and a Tally's OnWait; JoinPoolHooks
// and JoinOnCall combine them with hooks of your own.
//
//	c := ctxsyncprom.NewCollector(ctxsyncprom.Config{})
//	prometheus.MustRegister(c)
//
//	p, err := pool.New(pool.Config[*Conn]{Name: "db", ..., Hooks: c.PoolHooks("")})
//	...
//	err = c.AddPool("", p)
//
// # Many sources
//
// A Collector is a prometheus.Gatherer too. Registered, it is gathered as
// any collector is, and the registry checks each of its series against the
// others, hashing their labels: for a hundred pools that costs more than
// reading their snapshots. Served on its own, with
// promhttp.HandlerFor(c, promhttp.HandlerOpts{}) (on a path of its own, or
// beside the registry's handler), it skips those checks, which its series
// need not (they are consistent by construction): gathering a hundred pools
// then takes about a third of the time, and a few dozen allocations. Use one
// way or the other, not both.
//
// # Metrics
//
// Every name starts with the namespace of Config, "ctxsync" by default, and
// every series has the label name. Durations are in seconds. A gauge is a
// value now; a counter counts since the source was made (a breaker's since
// its last Reset, which Prometheus reads as a counter reset). A negative
// count, which only a source of one's own can report, gives 0, as in
// ctxsyncotel: a counter reset too, if the count was above it.
//
//	Metric                                     Type       Labels beside name  From
//	ctxsync_pool_resources                     gauge      state               AddPool: Stats.Closing, Constructing, Idle, InUse
//	ctxsync_pool_max_resources                 gauge                          AddPool: Stats.Max
//	ctxsync_pool_waiters                       gauge                          AddPool: Stats.Waiting
//	ctxsync_pool_acquires_total                counter                        AddPool: Stats.AcquireCount
//	ctxsync_pool_empty_acquires_total          counter                        AddPool: Stats.EmptyAcquires
//	ctxsync_pool_canceled_acquires_total       counter                        AddPool: Stats.CanceledAcquires
//	ctxsync_pool_waits_total                   counter                        AddPool: Stats.WaitCount
//	ctxsync_pool_wait_duration_seconds_total   counter                        AddPool: Stats.WaitDuration
//	ctxsync_pool_created_total                 counter                        AddPool: Stats.Created
//	ctxsync_pool_create_failures_total         counter                        AddPool: Stats.CreateFailures
//	ctxsync_pool_closed_total                  counter    reason              AddPool: Stats.ClosedDestroy, ClosedHealth, ClosedIdle, ClosedLifetime, ClosedPool
//	ctxsync_pool_close_errors_total            counter                        AddPool: Stats.CloseErrors
//	ctxsync_pool_acquire_wait_seconds          histogram                      PoolHooks: the Acquires that waited
//	ctxsync_pool_create_duration_seconds       histogram                      PoolHooks: the calls to New
//	ctxsync_breaker_state                      gauge      state               AddBreaker: 1 for Metrics.State, 0 for the others
//	ctxsync_breaker_disabled                   gauge                          AddBreaker: Metrics.Disabled as 0 or 1
//	ctxsync_breaker_calls_total                counter    outcome             AddBreaker: Metrics.Total.Failures, Ignored, Rejected, Successes
//	ctxsync_breaker_slow_calls_total           counter                        AddBreaker: Metrics.Total.Slow
//	ctxsync_breaker_consecutive_openings       gauge                          AddBreaker: Metrics.Openings
//	ctxsync_breaker_window_calls               gauge                          AddBreaker: Metrics.WindowCalls, with a rate rule
//	ctxsync_breaker_window_failure_ratio       gauge                          AddBreaker: Metrics.FailureRate/100, with a rate rule
//	ctxsync_breaker_window_slow_call_ratio     gauge                          AddBreaker: Metrics.SlowCallRate/100, with a rate rule
//	ctxsync_breaker_call_duration_seconds      histogram  outcome             BreakerOnCall: the calls let through
//	ctxsync_ratelimit_decisions_total          counter    decision            AddTally: Counts.Allowed, Refused
//	ctxsync_ratelimit_waits_total              counter    result              AddTally: Counts.Waited (taken), WaitFailed (failed)
//	ctxsync_ratelimit_wait_seconds             histogram  result              TallyOnWait: WaitN calls, Transport requests
//	ctxsync_semaphore_available                gauge                          AddSemaphore, AddWeighted: Available
//	ctxsync_semaphore_capacity                 gauge                          AddWeighted: Capacity
//	ctxsync_semaphore_waiters                  gauge                          AddSemaphore, AddWeighted: Waiting
//	ctxsync_queue_items                        gauge                          AddQueue: Len
//	ctxsync_queue_unfinished_tasks             gauge                          AddQueue: Unfinished
//	ctxsync_queue_capacity                     gauge                          AddQueue: Cap
//	ctxsync_queue_waiters                      gauge      side                AddQueue: Getters (get), Putters (put)
//	ctxsync_waiters                            gauge                          AddWaiter: Waiting
//	ctxsync_flight_calls                       gauge                          AddFlight: Len
//	ctxsync_keyedlock_keys                     gauge                          AddKeyedLock: Len
//	ctxsync_waitgroup_tasks                    gauge                          AddWaitGroup: Count
//	ctxsync_watch_version_total                counter                        AddWatch: Version (a counter: it only goes up, see AddWatch)
//	ctxsync_adaptive_limit                     gauge                          AddAdaptiveLimiter: Limit
//	ctxsync_adaptive_in_flight                 gauge                          AddAdaptiveLimiter: InFlight
//	ctxsync_adaptive_waiting                   gauge                          AddAdaptiveLimiter: Waiting
//	ctxsync_adaptive_shed_total                counter                        AddAdaptiveLimiter: Shed
//	ctxsync_adaptive_latency_seconds           gauge                          AddAdaptiveLimiter: Latency
//
// The sum of a pool's ctxsync_pool_resources is its Stats.Total, which it
// never lets exceed ctxsync_pool_max_resources.
//
// The label values: state of a pool's resources closing, constructing, idle,
// in_use; reason closed destroy, health, idle, lifetime, pool; state of a
// breaker closed, half-open, open; outcome failure, ignored, rejected, success
// (rejected calls are not in the histogram: they took no time); decision
// allowed, refused; result taken, failed; side get, put.
//
// # Cost
//
// A scrape reads each source's snapshot (a pool's Stats takes its lock once)
// and allocates three slabs for all the samples, whatever their number,
// beside what the registry allocates for each; the descriptions and the label
// pairs of each source are made when it is added. The hooks observe
// histograms whose series they looked up when made: no label lookup per
// event, and a pool's Acquire that did not wait costs them a function call.
package ctxsyncprom
