package store

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/slessio/sless/domain"
)

// InvocationBucket counts the invocations of one function that started in
// [Start, Start+width) (the width of InvocationHistogram); Errors are those
// that failed: status ≥ 500, or an error recorded with any status but 499
// (the caller went away, which says nothing about the function).
type InvocationBucket struct {
	Start         time.Time
	Count, Errors int
}

// MaxInvocationBuckets is the most buckets InvocationHistogram returns per function.
const MaxInvocationBuckets = 1000

// invocationHistogramSQL groups a namespace's invocations by function and
// bucket; the started_at range prunes the daily partitions and is an index
// condition of invocations_function_idx. $4 is the width in microseconds.
const invocationHistogramSQL = `SELECT function,
		date_bin($4::bigint * interval '1 microsecond', started_at, $2::timestamptz) AS bucket,
		count(*),
		count(*) FILTER (WHERE status >= 500 OR (error <> '' AND status <> 499))
	FROM invocations
	WHERE namespace = $1 AND started_at >= $2::timestamptz AND started_at < $3::timestamptz
	GROUP BY function, bucket`

// InvocationHistogram counts the invocations of namespace ns per function in
// buckets consecutive buckets of width from since (truncated to the
// microsecond): bucket i covers [since+i·width, since+(i+1)·width). Every
// function with an invocation in the range gets exactly buckets buckets,
// zero-filled; functions without any are left out.
//
// Errors: EINVALID (width not a positive whole number of microseconds,
// buckets outside 1..MaxInvocationBuckets, or a range too long for a
// time.Duration), EUNAVAILABLE, EINTERNAL.
func (s *Store) InvocationHistogram(ctx context.Context, ns string, since time.Time, width time.Duration, buckets int) (map[string][]InvocationBucket, error) {
	switch {
	case width < time.Microsecond || width%time.Microsecond != 0:
		return nil, domain.FieldErrorf("width", "must be a positive whole number of microseconds, not %v", width)
	case buckets < 1 || buckets > MaxInvocationBuckets:
		return nil, domain.FieldErrorf("buckets", "must be from 1 to %d, not %d", MaxInvocationBuckets, buckets)
	case width > math.MaxInt64/time.Duration(buckets):
		return nil, domain.FieldErrorf("width", "%v times %d buckets is too long a range", width, buckets)
	}
	since = since.UTC().Truncate(time.Microsecond)
	until := since.Add(width * time.Duration(buckets))
	rows, _ := s.pool.Query(ctx, invocationHistogramSQL, ns, since, until, width.Microseconds())
	type row struct {
		function      string
		start         time.Time
		count, errors int
	}
	counted, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (row, error) {
		var c row
		err := r.Scan(&c.function, &c.start, &c.count, &c.errors)
		return c, err
	})
	if err != nil {
		return nil, dbError("invocation histogram of "+ns, err)
	}
	out := map[string][]InvocationBucket{}
	for _, c := range counted {
		bs, ok := out[c.function]
		if !ok {
			bs = make([]InvocationBucket, buckets)
			for i := range bs {
				bs[i].Start = since.Add(time.Duration(i) * width)
			}
			out[c.function] = bs
		}
		i := int(c.start.Sub(since) / width)
		if i < 0 || i >= buckets || !c.start.Equal(bs[i].Start) {
			return nil, fmt.Errorf("invocation histogram of %s: bucket %v is not one of %d of %v from %v", ns, c.start, buckets, width, since)
		}
		bs[i].Count, bs[i].Errors = c.count, c.errors
	}
	return out, nil
}

// invocationMarkSQL counts from since on; the started_at bound prunes the
// older daily partitions.
const invocationMarkSQL = `SELECT count(*), max(ended_at) FROM invocations
	WHERE namespace = $1 AND started_at >= $2`

// InvocationMark returns how many invocations of namespace ns started at or
// after since and the latest time one of them ended (zero when there are
// none). The console polls it: when either changes, new invocation rows have
// been written and its charts and lists are worth reloading.
//
// Errors: EUNAVAILABLE, EINTERNAL.
func (s *Store) InvocationMark(ctx context.Context, ns string, since time.Time) (int64, time.Time, error) {
	var n int64
	var last *time.Time
	if err := s.pool.QueryRow(ctx, invocationMarkSQL, ns, since).Scan(&n, &last); err != nil {
		return 0, time.Time{}, dbError("invocation mark of "+ns, err)
	}
	if last == nil {
		return n, time.Time{}, nil
	}
	return n, last.UTC(), nil
}
