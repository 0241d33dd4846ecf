package store

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/slessio/sless/domain"
)

// TriggerKind says what started an invocation: a trigger of one of
// domain's TriggerTypes, or a job run (jobs are not triggers, so this is not
// domain.TriggerType itself; the shared kinds take domain's values).
type TriggerKind string

// Every trigger kind of an invocation.
const (
	InvocationHTTP TriggerKind = TriggerKind(domain.TriggerHTTP) // a request through the /fn/ proxy
	InvocationCron TriggerKind = TriggerKind(domain.TriggerCron) // a cron slot
	InvocationJob  TriggerKind = "job"                           // a one-shot job run
	// InvocationAPI is a call by the function's owner through the API's
	// POST .../functions/{name}/invoke or the console: no trigger needed.
	InvocationAPI TriggerKind = "api"
	// InvocationAsync is one attempt of an asynchronous invocation
	// (Invocation.AsyncID, Attempt), delivered by the async worker.
	InvocationAsync TriggerKind = "async"
)

// Invocation is one recorded call of a function. Status is the HTTP status
// the caller got; runs (cron, job) record 200 when they succeeded, 500 when
// they failed and 504 when they timed out. Log is the function's output for
// this call where the runtime captures it (X-Sless-Log; a run's stdout and
// stderr); lists leave it empty.
type Invocation struct {
	ID        uuid.UUID
	Namespace string
	Function  string
	Version   int
	Trigger   TriggerKind
	Method    string
	Path      string
	Status    int
	Duration  time.Duration
	ColdStart bool
	BytesIn   int64
	BytesOut  int64
	Error     string
	Log       string
	StartedAt time.Time
	EndedAt   time.Time
	// AsyncID and Attempt name the asynchronous invocation this record is
	// an attempt of (1, 2, ...); zero for every other invocation.
	AsyncID uuid.UUID
	Attempt int
}

// Limits of the stored text of an invocation.
const (
	MaxInvocationLog   = 64 << 10 // runtimes cap X-Sless-Log at 16 KiB; runs keep more
	MaxInvocationError = 2000
	MaxInvocationPath  = 2048
)

// NewInvocationID returns a UUIDv7 whose timestamp is the millisecond of
// startedAt, so an id alone says which daily partition holds its row. The 74
// random bits come from the runtime's ChaCha8 generator: ids need to be
// unique, not secret, and the proxy makes one per request.
func NewInvocationID(startedAt time.Time) uuid.UUID {
	var id uuid.UUID
	binary.BigEndian.PutUint64(id[:8], uint64(startedAt.UnixMilli())<<16|rand.Uint64()&0x0fff|0x7000)
	binary.BigEndian.PutUint64(id[8:], rand.Uint64()&0x3fffffffffffffff|0x8000000000000000)
	return id
}

// invocationIDTime is the millisecond an invocation id was made for.
func invocationIDTime(id uuid.UUID) time.Time {
	var ms [8]byte
	copy(ms[2:], id[:6])
	return time.UnixMilli(int64(binary.BigEndian.Uint64(ms[:])))
}

// normalize fills in what a recorder may leave out and caps the text fields.
func (inv *Invocation) normalize() {
	if inv.StartedAt.IsZero() {
		inv.StartedAt = time.Now()
	}
	inv.StartedAt = inv.StartedAt.UTC().Truncate(time.Microsecond)
	if inv.ID == uuid.Nil || !invocationIDTime(inv.ID).Equal(inv.StartedAt.Truncate(time.Millisecond)) {
		inv.ID = NewInvocationID(inv.StartedAt)
	}
	if inv.EndedAt.IsZero() {
		inv.EndedAt = inv.StartedAt.Add(inv.Duration)
	}
	inv.EndedAt = inv.EndedAt.UTC().Truncate(time.Microsecond)
	if inv.Trigger == "" {
		inv.Trigger = InvocationHTTP
	}
	inv.Method = storableText(inv.Method)
	inv.Path = domain.Truncate(storableText(inv.Path), MaxInvocationPath)
	inv.Error = domain.Truncate(storableText(inv.Error), MaxInvocationError)
	inv.Log = truncateLog(storableText(inv.Log), MaxInvocationLog)
}

// storableText returns s without what a text column refuses: NUL bytes
// and invalid UTF-8 (replaced by U+FFFD). One record holding either would
// make PostgreSQL refuse its whole batch; a function's output and a
// request's path may hold both.
func storableText(s string) string {
	if strings.IndexByte(s, 0) >= 0 {
		s = strings.ReplaceAll(s, "\x00", "")
	}
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	return s
}

// truncateLog keeps the end of a long log (where a failure's traceback is)
// within max bytes, on a rune boundary.
func truncateLog(s string, max int) string {
	if len(s) <= max {
		return s
	}
	const marker = "[sless: log truncated]\n"
	cut := len(s) - (max - len(marker))
	for cut < len(s) && (s[cut]&0xC0) == 0x80 {
		cut++
	}
	return marker + s[cut:]
}

// InvocationQuery selects invocations of one function, newest first.
// Since is inclusive, Until exclusive; zero times are open ends. StatusMin and
// StatusMax bound the status (inclusive; 0 means no bound). Limit ≤ 0 means
// DefaultInvocationLimit and is capped at MaxInvocationLimit. Cursor is the
// NextCursor of the previous page.
type InvocationQuery struct {
	Namespace, Function  string
	Since, Until         time.Time
	StatusMin, StatusMax int
	Limit                int
	Cursor               string
}

// Page sizes of ListInvocations.
const (
	DefaultInvocationLimit = 100
	MaxInvocationLimit     = 1000
)

// InvocationPage is one page of invocations; NextCursor is "" on the last page.
type InvocationPage struct {
	Invocations []Invocation
	NextCursor  string
}

const invocationColumns = `id, namespace, function, version, trigger_kind, method, path, status, duration_us,
	cold_start, bytes_in, bytes_out, error, log, started_at, ended_at, async_id, attempt`

// invocationCopyColumns are the columns the writer copies, in the order copyEncoder.invocations writes them.
var invocationCopyColumns = []string{"id", "namespace", "function", "version", "trigger_kind", "method", "path", "status",
	"duration_us", "cold_start", "bytes_in", "bytes_out", "error", "log", "started_at", "ended_at", "async_id", "attempt"}

// invocationCopyColumnsBefore14 are the columns of a COPY stream spooled by
// a server older than migration 00014 (no async_id, attempt): its spool is
// replayed with them (InvocationWriter.insertIdempotent).
var invocationCopyColumnsBefore14 = invocationCopyColumns[:16]

func scanInvocation(row pgx.CollectableRow) (Invocation, error) {
	var inv Invocation
	var id, asyncID pgtype.UUID
	var us int64
	err := row.Scan(&id, &inv.Namespace, &inv.Function, &inv.Version, &inv.Trigger, &inv.Method, &inv.Path, &inv.Status,
		&us, &inv.ColdStart, &inv.BytesIn, &inv.BytesOut, &inv.Error, &inv.Log, &inv.StartedAt, &inv.EndedAt, &asyncID, &inv.Attempt)
	inv.ID, inv.AsyncID = id.Bytes, asyncID.Bytes
	inv.Duration = time.Duration(us) * time.Microsecond
	inv.StartedAt, inv.EndedAt = inv.StartedAt.UTC(), inv.EndedAt.UTC()
	return inv, err
}

// ListInvocations returns a page of a function's invocations, newest first
// (by start time, then id), without their logs. Pages follow a keyset cursor,
// so rows written meanwhile never make a page repeat or skip an older row.
//
// Errors: EINVALID (a cursor this method did not hand out), EUNAVAILABLE, EINTERNAL.
func (s *Store) ListInvocations(ctx context.Context, q InvocationQuery) (InvocationPage, error) {
	limit := q.Limit
	switch {
	case limit <= 0:
		limit = DefaultInvocationLimit
	case limit > MaxInvocationLimit:
		limit = MaxInvocationLimit
	}
	// The cursor is an upper bound like Until: (started_at, id) below it.
	var curAt time.Time
	var curID pgtype.UUID
	useCursor := q.Cursor != ""
	if useCursor {
		at, id, err := decodeInvocationCursor(q.Cursor)
		if err != nil {
			return InvocationPage{}, err
		}
		curAt, curID = at, pgtype.UUID{Bytes: id, Valid: true}
	}
	// Only the filters given are in the statement: "(@since IS NULL OR
	// started_at >= @since)" would do in one, but a generic plan of it (a
	// prepared statement's from its sixth run on) neither skips partitions
	// nor bounds the index by it — 8.6 s for a function's errors of the
	// last hour at 10 M rows, where this takes 0.3 ms.
	args := pgx.NamedArgs{"ns": q.Namespace, "fn": q.Function, "limit": limit + 1}
	where := []string{"namespace = @ns", "function = @fn"}
	filter := func(cond, name string, value any) {
		where = append(where, cond)
		args[name] = value
	}
	if !q.Since.IsZero() {
		filter("started_at >= @since", "since", q.Since)
	}
	if !q.Until.IsZero() {
		filter("started_at < @until", "until", q.Until)
	}
	// Statuses are written into the statement (numbers, nothing to
	// escape), so that any plan of it, generic too, can prove a bound of
	// 400 or more implies invocations_errors_idx's predicate.
	if q.StatusMin != 0 {
		where = append(where, "status >= "+strconv.Itoa(q.StatusMin))
	}
	if q.StatusMax != 0 {
		where = append(where, "status <= "+strconv.Itoa(q.StatusMax))
	}
	if useCursor {
		filter("(started_at, id) < (@cur_at, @cur_id)", "cur_at", curAt)
		args["cur_id"] = curID
	}
	// The logs stay out of lists: a page of 1,000 could carry 64 MiB.
	rows, _ := s.pool.Query(ctx, `SELECT `+strings.Replace(invocationColumns, " log,", " ''::text,", 1)+` FROM invocations
		WHERE `+strings.Join(where, " AND ")+`
		ORDER BY started_at DESC, id DESC
		LIMIT @limit`, args)
	invs, err := pgx.CollectRows(rows, scanInvocation)
	if err != nil {
		return InvocationPage{}, dbError("list invocations", err)
	}
	page := InvocationPage{Invocations: invs}
	if len(invs) > limit {
		page.Invocations = invs[:limit]
		last := page.Invocations[limit-1]
		page.NextCursor = encodeInvocationCursor(last.StartedAt, last.ID)
	}
	return page, nil
}

// GetInvocation returns one invocation of a function with its log. The id's
// timestamp points at the partition, so the lookup reads one index range.
//
// Errors: ENOTFOUND, EUNAVAILABLE, EINTERNAL.
func (s *Store) GetInvocation(ctx context.Context, ns, function string, id uuid.UUID) (Invocation, error) {
	at := invocationIDTime(id)
	rows, _ := s.pool.Query(ctx, `SELECT `+invocationColumns+` FROM invocations
		WHERE namespace = $1 AND function = $2 AND started_at >= $3 AND started_at < $4 AND id = $5
		LIMIT 1`, ns, function, at, at.Add(time.Millisecond), pgtype.UUID{Bytes: id, Valid: true})
	inv, err := pgx.CollectExactlyOneRow(rows, scanInvocation)
	if errors.Is(err, pgx.ErrNoRows) {
		return inv, domain.Errorf(domain.ENOTFOUND, "invocation %s of function %q not found", id, function)
	}
	return inv, dbError("get invocation", err)
}

// LastInvocationEnd returns when the newest invocation of a function by one
// of the trigger kinds, started after since, ended; zero when there is none.
// The proxy of each replica asks it before scaling a function to zero, so
// traffic served by another replica keeps the function up.
//
// Errors: EUNAVAILABLE, EINTERNAL.
func (s *Store) LastInvocationEnd(ctx context.Context, ns, function string, since time.Time, kinds ...TriggerKind) (time.Time, error) {
	var ended time.Time
	names := make([]string, len(kinds))
	for i, k := range kinds {
		names[i] = string(k)
	}
	err := s.pool.QueryRow(ctx, `SELECT ended_at FROM invocations
		WHERE namespace = $1 AND function = $2 AND started_at > $3 AND trigger_kind = ANY($4)
		ORDER BY started_at DESC LIMIT 1`, ns, function, since, names).Scan(&ended)
	if errors.Is(err, pgx.ErrNoRows) {
		return time.Time{}, nil
	}
	return ended.UTC(), dbError("last invocation", err)
}

// encodeInvocationCursor makes the opaque cursor "<unix µs>.<id>".
func encodeInvocationCursor(at time.Time, id uuid.UUID) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(at.UnixMicro(), 10) + "." + id.String()))
}

func decodeInvocationCursor(c string) (time.Time, uuid.UUID, error) {
	bad := domain.FieldErrorf("cursor", "is not a cursor of this listing")
	raw, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return time.Time{}, uuid.Nil, bad
	}
	us, idText, ok := strings.Cut(string(raw), ".")
	n, err1 := strconv.ParseInt(us, 10, 64)
	id, err2 := uuid.Parse(idText)
	if !ok || err1 != nil || err2 != nil {
		return time.Time{}, uuid.Nil, bad
	}
	return time.UnixMicro(n).UTC(), id, nil
}
