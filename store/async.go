package store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/riverqueue/river"

	"github.com/slessio/sless/domain"
)

// AsyncRequest is the request of an asynchronous invocation as it was
// accepted: what the function is sent at each attempt.
type AsyncRequest struct {
	Method  string
	Path    string // below the function, starting with "/"
	Query   string // without "?"
	Headers map[string][]string
	Body    []byte
	// CallbackURL receives the final response, if set.
	CallbackURL string
	// RemoteAddr and Host are the caller's peer (ip:port) and Host: each
	// delivery forwards them as the synchronous call would have.
	RemoteAddr, Host string
}

// AsyncAttempt is one delivery attempt; Status 0 means no answer (Error says why).
type AsyncAttempt struct {
	Attempt   int       `json:"attempt"`
	StartedAt time.Time `json:"started_at"`
	EndedAt   time.Time `json:"ended_at"`
	Status    int       `json:"status"`
	Error     string    `json:"error,omitempty"`
}

// AsyncResponse is the function's last answer.
type AsyncResponse struct {
	Status  int
	Headers map[string][]string
	Body    []byte
}

// AsyncInvocation is an asynchronous invocation as stored.
type AsyncInvocation struct {
	ID             uuid.UUID
	Namespace      string
	Function       string
	IdempotencyKey string
	Request        AsyncRequest
	State          domain.AsyncState
	Attempts       []AsyncAttempt
	AttemptCount   int
	// AttemptBase is AttemptCount when it was last retried from the dead
	// letters: its retries count from there.
	AttemptBase   int
	Response      AsyncResponse
	Error         string
	CallbackState string // "", "delivered", "failed: ..."
	EnqueuedAt    time.Time
	// AgeFrom is when its age (max_event_age_sec) counts from: the
	// enqueue, or the last retry from the dead letters.
	AgeFrom    time.Time
	UpdatedAt  time.Time
	FinishedAt time.Time // zero until finished
}

const asyncColumns = `id, namespace, function, coalesce(idempotency_key, ''), method, path, query, headers, body,
	callback_url, remote_addr, host, state, attempts, attempt_count, attempt_base, response_status, response_headers, response_body, error, callback_state,
	enqueued_at, coalesce(requeued_at, enqueued_at), updated_at, finished_at`

func scanAsync(row pgx.CollectableRow) (AsyncInvocation, error) {
	var a AsyncInvocation
	var id pgtype.UUID
	var headers, attempts, respHeaders []byte
	var finished pgtype.Timestamptz
	err := row.Scan(&id, &a.Namespace, &a.Function, &a.IdempotencyKey, &a.Request.Method, &a.Request.Path,
		&a.Request.Query, &headers, &a.Request.Body, &a.Request.CallbackURL, &a.Request.RemoteAddr, &a.Request.Host, &a.State, &attempts, &a.AttemptCount, &a.AttemptBase,
		&a.Response.Status, &respHeaders, &a.Response.Body, &a.Error, &a.CallbackState, &a.EnqueuedAt, &a.AgeFrom, &a.UpdatedAt, &finished)
	if err != nil {
		return a, err
	}
	a.ID = id.Bytes
	a.EnqueuedAt, a.AgeFrom, a.UpdatedAt = a.EnqueuedAt.UTC(), a.AgeFrom.UTC(), a.UpdatedAt.UTC()
	if finished.Valid {
		a.FinishedAt = finished.Time.UTC()
	}
	for _, f := range []struct {
		raw []byte
		to  any
	}{{headers, &a.Request.Headers}, {attempts, &a.Attempts}, {respHeaders, &a.Response.Headers}} {
		if err := json.Unmarshal(f.raw, f.to); err != nil {
			return a, err
		}
	}
	return a, nil
}

// EnqueueAsync stores a new asynchronous invocation and inserts job (its
// delivery) in one transaction, so that what the caller acknowledges is
// durable; without a key, in a group commit with the enqueues that arrive
// meanwhile (async_batch.go). hash identifies the request for its Idempotency-Key: with a key
// used for the function within domain.IdempotencyWindow, nothing is stored
// and the invocation enqueued first is returned with created false; a
// different request under that key is EUNPROCESSABLE. A key older than the
// window is released and taken by the new invocation.
//
// Errors: EUNPROCESSABLE, EUNAVAILABLE, EINTERNAL.
func (s *Store) EnqueueAsync(ctx context.Context, inv AsyncInvocation, hash []byte, job river.InsertManyParams) (AsyncInvocation, bool, error) {
	headers, err := encodeHeaders(inv.Request.Headers)
	if err != nil {
		return inv, false, err
	}
	if inv.IdempotencyKey == "" {
		if err := s.enqueueGrouped(ctx, inv, hash, headers, job); err != nil {
			return inv, false, err
		}
		inv.State, inv.UpdatedAt = domain.AsyncQueued, inv.EnqueuedAt
		return inv, true, nil
	}
	body := inv.Request.Body
	if body == nil {
		body = []byte{} // bytea NOT NULL: nil would be NULL
	}
	var key *string
	if inv.IdempotencyKey != "" {
		key = &inv.IdempotencyKey
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return inv, false, dbError("enqueue async invocation", err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // after Commit it does nothing
	for range 2 {
		tag, err := tx.Exec(ctx, `INSERT INTO async_invocations (id, namespace, function, idempotency_key, request_hash,
				method, path, query, headers, body, callback_url, remote_addr, host, state, enqueued_at, updated_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, 'queued', $14, $14)
			ON CONFLICT (namespace, function, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING`,
			inv.ID, inv.Namespace, inv.Function, key, hash, inv.Request.Method, inv.Request.Path,
			inv.Request.Query, headers, body, inv.Request.CallbackURL, inv.Request.RemoteAddr, inv.Request.Host, inv.EnqueuedAt)
		if err != nil {
			return inv, false, dbError("enqueue async invocation", err)
		}
		if tag.RowsAffected() == 1 {
			if _, err := s.InsertJobsTx(ctx, tx, []river.InsertManyParams{job}); err != nil {
				return inv, false, err
			}
			if err := tx.Commit(ctx); err != nil {
				return inv, false, dbError("enqueue async invocation", err)
			}
			inv.State, inv.UpdatedAt = domain.AsyncQueued, inv.EnqueuedAt
			return inv, true, nil
		}
		// The key is taken: by an invocation within the window (answer
		// it), or by an older one (release the key and insert again).
		var first pgtype.UUID
		var firstHash []byte
		var at time.Time
		err = tx.QueryRow(ctx, `SELECT id, request_hash, enqueued_at FROM async_invocations
			WHERE namespace = $1 AND function = $2 AND idempotency_key = $3 FOR UPDATE`,
			inv.Namespace, inv.Function, inv.IdempotencyKey).Scan(&first, &firstHash, &at)
		if errors.Is(err, pgx.ErrNoRows) {
			continue // released meanwhile: insert again
		}
		if err != nil {
			return inv, false, dbError("enqueue async invocation", err)
		}
		if inv.EnqueuedAt.Sub(at) < domain.IdempotencyWindow {
			if !bytes.Equal(firstHash, hash) {
				return inv, false, domain.Errorf(domain.EUNPROCESSABLE,
					"Idempotency-Key %q was used for another request to this function (invocation %s): use a new key for a new request",
					inv.IdempotencyKey, uuid.UUID(first.Bytes))
			}
			if err := tx.Commit(ctx); err != nil {
				return inv, false, dbError("enqueue async invocation", err)
			}
			got, err := s.GetAsync(ctx, inv.Namespace, inv.Function, first.Bytes)
			return got, false, err
		}
		if _, err := tx.Exec(ctx, `UPDATE async_invocations SET idempotency_key = NULL WHERE id = $1`, first); err != nil {
			return inv, false, dbError("enqueue async invocation", err)
		}
	}
	return inv, false, domain.Errorf(domain.EUNAVAILABLE, "enqueue async invocation: the Idempotency-Key %q is contended; try again", inv.IdempotencyKey)
}

// GetAsync returns one asynchronous invocation of a function.
//
// Errors: ENOTFOUND, EUNAVAILABLE, EINTERNAL.
func (s *Store) GetAsync(ctx context.Context, ns, function string, id uuid.UUID) (AsyncInvocation, error) {
	rows, _ := s.pool.Query(ctx, `SELECT `+asyncColumns+` FROM async_invocations WHERE id = $1 AND namespace = $2 AND function = $3`,
		id, ns, function)
	a, err := pgx.CollectExactlyOneRow(rows, scanAsync)
	return a, notFound(err, "invocation", id.String())
}

// ClaimResult says what ClaimAsync found.
type ClaimResult int

const (
	Claimed  ClaimResult = iota // the invocation is running: deliver attempt AttemptCount
	Finished                    // it is finished (or gone): nothing to deliver
	Busy                        // maxConcurrency deliveries of the function run: try later
	Expired                     // it is older than maxAge: give it up, unattempted
)

// ClaimAsync starts an attempt of invocation id: not when it was enqueued
// more than maxAge ago (Expired); with maxConcurrency > 0, only when fewer
// deliveries of the function are running (a running row whose lease passed
// is not counted: its worker died). The lease is how long the attempt may
// take.
//
// Errors: EUNAVAILABLE, EINTERNAL.
func (s *Store) ClaimAsync(ctx context.Context, id uuid.UUID, maxConcurrency int, maxAge time.Duration, now time.Time, lease time.Duration) (AsyncInvocation, ClaimResult, error) {
	if maxConcurrency <= 0 {
		// Nothing to count: one statement claims it when it can be; the
		// transaction below says why when it cannot.
		rows, _ := s.pool.Query(ctx, `UPDATE async_invocations SET state = 'running', attempt_count = attempt_count + 1,
				lease_until = $2, updated_at = $3
			WHERE id = $1 AND state IN ('queued', 'running') AND coalesce(requeued_at, enqueued_at) >= $4
			RETURNING `+asyncColumns, id, now.Add(lease), now, now.Add(-maxAge))
		a, err := pgx.CollectExactlyOneRow(rows, scanAsync)
		if err == nil {
			return a, Claimed, nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return a, Claimed, dbError("claim async invocation", err)
		}
	}
	var out AsyncInvocation
	var res ClaimResult
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		rows, _ := tx.Query(ctx, `SELECT `+asyncColumns+` FROM async_invocations WHERE id = $1 FOR UPDATE`, id)
		a, err := pgx.CollectExactlyOneRow(rows, scanAsync)
		if errors.Is(err, pgx.ErrNoRows) {
			res = Finished
			return nil
		}
		if err != nil {
			return err
		}
		out = a
		if a.State.Finished() {
			res = Finished
			return nil
		}
		if now.Sub(a.AgeFrom) > maxAge {
			res = Expired
			return nil
		}
		if maxConcurrency > 0 {
			// One claimer of the function at a time counts and claims.
			if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('async:' || $1 || '/' || $2, 0))`,
				a.Namespace, a.Function); err != nil {
				return err
			}
			var running int
			if err := tx.QueryRow(ctx, `SELECT count(*) FROM async_invocations
				WHERE namespace = $1 AND function = $2 AND state = 'running' AND lease_until > $3 AND id <> $4`,
				a.Namespace, a.Function, now, id).Scan(&running); err != nil {
				return err
			}
			if running >= maxConcurrency {
				res = Busy
				return nil
			}
		}
		if err := tx.QueryRow(ctx, `UPDATE async_invocations SET state = 'running', attempt_count = attempt_count + 1,
				lease_until = $2, updated_at = $3 WHERE id = $1 RETURNING attempt_count`,
			id, now.Add(lease), now).Scan(&out.AttemptCount); err != nil {
			return err
		}
		out.State, res = domain.AsyncRunning, Claimed
		return nil
	})
	return out, res, dbError("claim async invocation", err)
}

// FinishAsyncTx records attempt of invocation id in tx (nil: none was
// made) and moves it to state: queued again (a retry follows), or a final
// state with the function's last answer (resp; nil keeps none) and errMsg.
//
// Errors: EUNAVAILABLE, EINTERNAL.
func (s *Store) FinishAsyncTx(ctx context.Context, tx pgx.Tx, id uuid.UUID, attempt *AsyncAttempt, state domain.AsyncState, resp *AsyncResponse, errMsg string, now time.Time) error {
	return finishAsync(ctx, tx, id, attempt, state, resp, errMsg, now)
}

// FinishAsync is FinishAsyncTx in a statement of its own, for an outcome
// that goes with nothing else (no event, no job).
//
// Errors: EUNAVAILABLE, EINTERNAL.
func (s *Store) FinishAsync(ctx context.Context, id uuid.UUID, attempt *AsyncAttempt, state domain.AsyncState, resp *AsyncResponse, errMsg string, now time.Time) error {
	return finishAsync(ctx, s.pool, id, attempt, state, resp, errMsg, now)
}

// execer runs a statement: a transaction or the pool.
type execer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

func finishAsync(ctx context.Context, db execer, id uuid.UUID, attempt *AsyncAttempt, state domain.AsyncState, resp *AsyncResponse, errMsg string, now time.Time) error {
	attempts := []AsyncAttempt{}
	if attempt != nil {
		attempts = append(attempts, *attempt)
	}
	att, err := json.Marshal(attempts)
	if err != nil {
		return domain.Errorf(domain.EINTERNAL, "encode attempt: %v", err)
	}
	var status int
	headers, body := []byte("{}"), []byte{}
	if resp != nil {
		status = resp.Status
		if resp.Body != nil {
			body = resp.Body
		}
		if headers, err = json.Marshal(resp.Headers); err != nil {
			return domain.Errorf(domain.EINTERNAL, "encode headers: %v", err)
		}
	}
	var finished *time.Time
	if state.Finished() {
		finished = &now
	}
	_, err = db.Exec(ctx, `UPDATE async_invocations SET state = $2, attempts = attempts || $3::jsonb, lease_until = NULL,
			response_status = CASE WHEN $4::bool THEN $5 ELSE response_status END,
			response_headers = CASE WHEN $4::bool THEN $6::jsonb ELSE response_headers END,
			response_body = CASE WHEN $4::bool THEN $7 ELSE response_body END,
			error = $8, updated_at = $9, finished_at = $10
		WHERE id = $1`, id, state, att, resp != nil, status, headers, body, errMsg, now, finished)
	return dbError("finish async invocation", err)
}

// SetAsyncCallbackState records how the callback of invocation id went.
//
// Errors: EUNAVAILABLE, EINTERNAL.
func (s *Store) SetAsyncCallbackState(ctx context.Context, id uuid.UUID, state string) error {
	_, err := s.pool.Exec(ctx, `UPDATE async_invocations SET callback_state = $2 WHERE id = $1`, id, state)
	return dbError("record callback", err)
}

// AsyncQuery selects a page of a function's asynchronous invocations in
// one state, newest first.
type AsyncQuery struct {
	Namespace, Function string
	State               domain.AsyncState
	Limit               int
	Cursor              string // NextCursor of the previous page
}

// AsyncPage is a page of ListAsync.
type AsyncPage struct {
	Invocations []AsyncInvocation
	NextCursor  string
}

// ListAsync returns a page of a function's asynchronous invocations in
// q.State (dead letters, queued work), newest first.
//
// Errors: EINVALID (a cursor ListAsync did not hand out), EUNAVAILABLE, EINTERNAL.
func (s *Store) ListAsync(ctx context.Context, q AsyncQuery) (AsyncPage, error) {
	limit := q.Limit
	if limit <= 0 || limit > MaxInvocationLimit {
		limit = DefaultInvocationLimit
	}
	at, id := time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC), uuid.Max // above every row
	if q.Cursor != "" {
		var err error
		if at, id, err = decodeInvocationCursor(q.Cursor); err != nil {
			return AsyncPage{}, err
		}
	}
	rows, _ := s.pool.Query(ctx, `SELECT `+asyncColumns+` FROM async_invocations
		WHERE namespace = $1 AND function = $2 AND state = $3 AND (enqueued_at, id) < ($4, $5)
		ORDER BY enqueued_at DESC, id DESC LIMIT $6`, q.Namespace, q.Function, q.State, at, id, limit+1)
	invs, err := pgx.CollectRows(rows, scanAsync)
	if err != nil {
		return AsyncPage{}, dbError("list async invocations", err)
	}
	page := AsyncPage{Invocations: invs}
	if len(invs) > limit {
		page.Invocations = invs[:limit]
		last := invs[limit-1]
		page.NextCursor = encodeInvocationCursor(last.EnqueuedAt, last.ID)
	}
	return page, nil
}

// RequeueDeadLetterTx moves dead letter id of a function back to queued in
// tx (its attempts are kept and continue) and inserts job, its delivery.
//
// Errors: ENOTFOUND (no such dead letter), EUNAVAILABLE, EINTERNAL.
func (s *Store) RequeueDeadLetterTx(ctx context.Context, tx pgx.Tx, ns, function string, id uuid.UUID, job river.InsertManyParams, now time.Time) error {
	tag, err := tx.Exec(ctx, `UPDATE async_invocations SET state = 'queued', finished_at = NULL, updated_at = $4, requeued_at = $4, callback_state = '',
			attempt_base = attempt_count
		WHERE id = $1 AND namespace = $2 AND function = $3 AND state = 'dead_lettered'`, id, ns, function, now)
	if err != nil {
		return dbError("retry dead letter", err)
	}
	if tag.RowsAffected() == 0 {
		return domain.Errorf(domain.ENOTFOUND, "dead letter %q not found", id.String())
	}
	_, err = s.InsertJobsTx(ctx, tx, []river.InsertManyParams{job})
	return err
}

// DeleteDeadLettersTx deletes dead letters of a function in tx: ids, or
// all of them when ids is empty. It returns the ids deleted.
//
// Errors: EUNAVAILABLE, EINTERNAL.
func (s *Store) DeleteDeadLettersTx(ctx context.Context, tx pgx.Tx, ns, function string, ids []uuid.UUID) ([]uuid.UUID, error) {
	q := `DELETE FROM async_invocations WHERE namespace = $1 AND function = $2 AND state = 'dead_lettered'`
	args := []any{ns, function}
	if len(ids) > 0 {
		q += ` AND id = ANY($3)`
		args = append(args, ids)
	}
	rows, _ := tx.Query(ctx, q+` RETURNING id`, args...)
	got, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	return got, dbError("delete dead letters", err)
}

// DeleteAsyncOfTx deletes every asynchronous invocation of a function in
// tx: the transaction that deletes the function. A delivery running then
// finds nothing to record.
//
// Errors: EUNAVAILABLE, EINTERNAL.
func (s *Store) DeleteAsyncOfTx(ctx context.Context, tx pgx.Tx, ns, function string) error {
	_, err := tx.Exec(ctx, `DELETE FROM async_invocations WHERE namespace = $1 AND function = $2`, ns, function)
	return dbError("delete async invocations", err)
}

// PruneAsync deletes the invocations that finished before before, except
// dead letters (kept until deleted). It returns how many.
//
// Errors: EUNAVAILABLE, EINTERNAL.
func (s *Store) PruneAsync(ctx context.Context, before time.Time) (int64, error) {
	tag, err := s.pool.Exec(ctx, `DELETE FROM async_invocations WHERE state IN ('succeeded', 'failed') AND finished_at < $1`, before)
	return tag.RowsAffected(), dbError("prune async invocations", err)
}

// GetAsyncByID returns an asynchronous invocation by id alone (the
// callback worker's lookup).
//
// Errors: ENOTFOUND, EUNAVAILABLE, EINTERNAL.
func (s *Store) GetAsyncByID(ctx context.Context, id uuid.UUID) (AsyncInvocation, error) {
	rows, _ := s.pool.Query(ctx, `SELECT `+asyncColumns+` FROM async_invocations WHERE id = $1`, id)
	a, err := pgx.CollectExactlyOneRow(rows, scanAsync)
	return a, notFound(err, "invocation", id.String())
}
