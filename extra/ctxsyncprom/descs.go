package ctxsyncprom

import "github.com/prometheus/client_golang/prometheus"

// descs are the descriptions of the metrics read from snapshots, made once
// per Collector. The package doc's table lists them.
type descs struct {
	poolResources, poolMax, poolWaiters                          *prometheus.Desc
	poolAcquires, poolEmptyAcquires, poolCanceled                *prometheus.Desc
	poolWaits, poolWaitDuration                                  *prometheus.Desc
	poolCreated, poolCreateFailures, poolClosed, poolCloseErrors *prometheus.Desc

	breakerState, breakerDisabled, breakerCalls, breakerSlowCalls *prometheus.Desc
	breakerOpenings, breakerWindowCalls                           *prometheus.Desc
	breakerFailureRatio, breakerSlowCallRatio                     *prometheus.Desc

	limiterDecisions, limiterWaits *prometheus.Desc

	semAvailable, semCapacity, semWaiters *prometheus.Desc

	queueItems, queueUnfinished, queueCapacity, queueWaiters *prometheus.Desc

	waiters *prometheus.Desc

	flightCalls, keyedLockKeys, waitGroupCount, watchVersion *prometheus.Desc

	adaptiveLimit, adaptiveInFlight, adaptiveWaiting, adaptiveShed, adaptiveLatency *prometheus.Desc

	// info holds the name and help of every description above, and of
	// the histograms': a Desc does not tell them, and Gather needs them.
	info map[*prometheus.Desc]descInfo
}

type descInfo struct{ name, help string }

func newDescs(ns string) descs {
	info := map[*prometheus.Desc]descInfo{}
	d := func(subsystem, name, help string, labels ...string) *prometheus.Desc {
		fq := prometheus.BuildFQName(ns, subsystem, name)
		desc := prometheus.NewDesc(fq, help, append([]string{"name"}, labels...), nil)
		info[desc] = descInfo{fq, help}
		return desc
	}
	return descs{
		info: info,

		poolResources:      d("pool", "resources", "Resources of the pool now, by state: idle, in_use, constructing (calls to New under way), closing (calls to Close under way).", "state"),
		poolMax:            d("pool", "max_resources", "The most resources the pool may hold (Config.MaxSize)."),
		poolWaiters:        d("pool", "waiters", "Acquires waiting now for a release or a new resource."),
		poolAcquires:       d("pool", "acquires_total", "Acquires and TryAcquires that returned a resource."),
		poolEmptyAcquires:  d("pool", "empty_acquires_total", "Acquires that found no idle resource."),
		poolCanceled:       d("pool", "canceled_acquires_total", "Acquires that ended with their context while under way."),
		poolWaits:          d("pool", "waits_total", "Acquires that waited, for a release or a new resource."),
		poolWaitDuration:   d("pool", "wait_duration_seconds_total", "Time the Acquires counted in waits_total waited, in all."),
		poolCreated:        d("pool", "created_total", "Resources made by New."),
		poolCreateFailures: d("pool", "create_failures_total", "Calls to New that failed, or that the pool's breaker refused."),
		poolClosed:         d("pool", "closed_total", "Resources closed, by reason: idle (MaxIdleTime), lifetime (MaxLifetime), health (failed HealthCheck), destroy (Destroy), pool (Close).", "reason"),
		poolCloseErrors:    d("pool", "close_errors_total", "Calls to the pool's Close function that returned an error."),

		breakerState:         d("breaker", "state", "1 for the state the breaker is in (closed, half-open or open), 0 for the others.", "state"),
		breakerDisabled:      d("breaker", "disabled", "1 if the breaker is disabled: it lets every call through."),
		breakerCalls:         d("breaker", "calls_total", "Calls by outcome: success, failure, ignored (let through, their error not judged), rejected (refused by the breaker). Reset on Breaker.Reset.", "outcome"),
		breakerSlowCalls:     d("breaker", "slow_calls_total", "Calls slower than SlowCallDuration, whatever their outcome. Reset on Breaker.Reset."),
		breakerOpenings:      d("breaker", "consecutive_openings", "Openings since the breaker last closed, which OpenBackoff scales the open time by."),
		breakerWindowCalls:   d("breaker", "window_calls", "Calls in the window of the rate rules; only with a rate rule."),
		breakerFailureRatio:  d("breaker", "window_failure_ratio", "Failed calls in the window of the rate rules, as a fraction of its calls; only with a rate rule."),
		breakerSlowCallRatio: d("breaker", "window_slow_call_ratio", "Slow calls in the window of the rate rules, as a fraction of its calls; only with a rate rule."),

		limiterDecisions: d("ratelimit", "decisions_total", "AllowN, Take and TakeContext calls through the Tally, by decision: allowed or refused.", "decision"),
		limiterWaits:     d("ratelimit", "waits_total", "WaitN calls and Transport requests through the Tally, by result: taken (the events were taken) or failed (an error).", "result"),

		semAvailable: d("semaphore", "available", "Permits (units, for a Weighted) free now."),
		semCapacity:  d("semaphore", "capacity", "Units of a Weighted semaphore, free or held; only for Weighted."),
		semWaiters:   d("semaphore", "waiters", "Goroutines waiting now to acquire."),

		queueItems:      d("queue", "items", "Items in the queue now."),
		queueUnfinished: d("queue", "unfinished_tasks", "Items put and not yet marked done with TaskDone."),
		queueCapacity:   d("queue", "capacity", "The most items the queue holds; 0 if unbounded."),
		queueWaiters:    d("queue", "waiters", "Goroutines waiting now on the queue, by side: get (consumers starved of items), put (producers held back by a full queue).", "side"),

		waiters: d("", "waiters", "Goroutines waiting now on the primitive (a lock, a barrier, a condition)."),

		flightCalls:    d("flight", "calls", "Calls in flight now: keys with a call under way."),
		keyedLockKeys:  d("keyedlock", "keys", "Keys held or waited for now."),
		waitGroupCount: d("waitgroup", "tasks", "The counter of the WaitGroup now: tasks added and not yet done."),
		watchVersion:   d("watch", "version_total", "The version of the watched value: 1 when made, one more at each Store."),

		adaptiveLimit:    d("adaptive", "limit", "Calls the adaptive limiter lets run at once now, as its algorithm sets it."),
		adaptiveInFlight: d("adaptive", "in_flight", "Calls admitted and not yet done."),
		adaptiveWaiting:  d("adaptive", "waiting", "Calls waiting now to be admitted."),
		adaptiveShed:     d("adaptive", "shed_total", "Calls shed with ErrShed."),
		adaptiveLatency:  d("adaptive", "latency_seconds", "The baseline latency the limiter estimates: the service's latency when nothing queues; 0 before its first window."),
	}
}

func (d *descs) all() []*prometheus.Desc {
	return []*prometheus.Desc{
		d.poolResources, d.poolMax, d.poolWaiters,
		d.poolAcquires, d.poolEmptyAcquires, d.poolCanceled,
		d.poolWaits, d.poolWaitDuration,
		d.poolCreated, d.poolCreateFailures, d.poolClosed, d.poolCloseErrors,
		d.breakerState, d.breakerDisabled, d.breakerCalls, d.breakerSlowCalls,
		d.breakerOpenings, d.breakerWindowCalls, d.breakerFailureRatio, d.breakerSlowCallRatio,
		d.limiterDecisions, d.limiterWaits,
		d.semAvailable, d.semCapacity, d.semWaiters,
		d.queueItems, d.queueUnfinished, d.queueCapacity, d.queueWaiters,
		d.waiters,
		d.flightCalls, d.keyedLockKeys, d.waitGroupCount, d.watchVersion,
		d.adaptiveLimit, d.adaptiveInFlight, d.adaptiveWaiting, d.adaptiveShed, d.adaptiveLatency,
	}
}
