package store

import (
	"context"
	"time"
)

// The windows of FunctionInvocationStats.
const (
	StatsHour = time.Hour
	StatsDay  = 24 * time.Hour
)

// InvocationStats sums up the invocations of one function that started in
// the window (Until−Window, Until].
//
// Errors counts the invocations that failed as sless_function_errors_total
// counts them (httpapi/proxy's isFunctionError), as far as the log can
// tell: a status of 500 or more — the function's own 5xx answer, a
// response cut off (502), a timeout (504), no answer (502), a failed start
// (503), a failed run (500, 504) — except a job or cron run the platform
// interrupted (invoke.StatusInterrupted, 503: a shutdown or a crash, not the
// function's fault). A caller that went away (499) and the proxy's refusals
// of the request (413, 429, 409) are not errors. One difference remains: the
// log does not say who answered a 503, so the proxy's refusal of a request
// while the http trigger is disabled or the function not ready counts here,
// and not in the metric.
type InvocationStats struct {
	Window                    time.Duration
	Until                     time.Time
	Count, Errors, ColdStarts int
	// P50 and P99 are the durations at or below which half and 99% of the
	// invocations ended (percentile_disc: one of the recorded durations);
	// zero when there are none.
	P50, P99 time.Duration
}

// PerMinute is the mean number of invocations a minute over the window.
func (s InvocationStats) PerMinute() float64 {
	if s.Window <= 0 {
		return 0
	}
	return float64(s.Count) / s.Window.Minutes()
}

// ErrorPercent is the share of the invocations that failed, 0 to 100; 0
// when there are none.
func (s InvocationStats) ErrorPercent() float64 {
	if s.Count == 0 {
		return 0
	}
	return 100 * float64(s.Errors) / float64(s.Count)
}

// FunctionStats is a function's invocations over the last hour and the
// last day (which includes the hour).
type FunctionStats struct {
	Hour, Day InvocationStats
}

// invocationErrorSQL is InvocationStats' error, as a condition on a row of
// invocations. The run kinds are store's InvocationJob and InvocationCron;
// 503 is invoke.StatusInterrupted (which imports store).
const invocationErrorSQL = `status >= 500 AND NOT (status = 503 AND trigger_kind IN ('job', 'cron'))`

// functionStatsSQL reads both windows in one pass over the day: $3 starts
// the day, $4 the hour and $5 ends both. Its conditions are those of
// invocations_function_idx (namespace, function, started_at), and the
// started_at range prunes the daily partitions to the two the day touches.
const functionStatsSQL = `SELECT
		count(*) FILTER (WHERE started_at > $4),
		count(*) FILTER (WHERE started_at > $4 AND ` + invocationErrorSQL + `),
		count(*) FILTER (WHERE started_at > $4 AND cold_start),
		percentile_disc(ARRAY[0.5, 0.99]) WITHIN GROUP (ORDER BY duration_us) FILTER (WHERE started_at > $4),
		count(*),
		count(*) FILTER (WHERE ` + invocationErrorSQL + `),
		count(*) FILTER (WHERE cold_start),
		percentile_disc(ARRAY[0.5, 0.99]) WITHIN GROUP (ORDER BY duration_us)
	FROM invocations
	WHERE namespace = $1 AND function = $2 AND started_at > $3::timestamptz AND started_at <= $5::timestamptz`

// FunctionInvocationStats sums up the invocations of function ns/name that
// started in the hour and the day up to now (truncated to the
// microsecond, as the log's times are): see InvocationStats.
//
// Errors: EUNAVAILABLE, EINTERNAL.
func (s *Store) FunctionInvocationStats(ctx context.Context, ns, name string, now time.Time) (FunctionStats, error) {
	now = now.UTC().Truncate(time.Microsecond)
	st := FunctionStats{Hour: InvocationStats{Window: StatsHour, Until: now}, Day: InvocationStats{Window: StatsDay, Until: now}}
	var hourPct, dayPct []int64
	err := s.pool.QueryRow(ctx, functionStatsSQL, ns, name, now.Add(-StatsDay), now.Add(-StatsHour), now).Scan(
		&st.Hour.Count, &st.Hour.Errors, &st.Hour.ColdStarts, &hourPct,
		&st.Day.Count, &st.Day.Errors, &st.Day.ColdStarts, &dayPct)
	if err != nil {
		return FunctionStats{}, dbError("invocation stats of "+ns+"/"+name, err)
	}
	st.Hour.P50, st.Hour.P99 = percentiles(hourPct)
	st.Day.P50, st.Day.P99 = percentiles(dayPct)
	return st, nil
}

// percentiles are the p50 and p99 of percentile_disc's array of
// microseconds; NULL (no rows) is zero.
func percentiles(us []int64) (p50, p99 time.Duration) {
	if len(us) != 2 {
		return 0, 0
	}
	return time.Duration(us[0]) * time.Microsecond, time.Duration(us[1]) * time.Microsecond
}
