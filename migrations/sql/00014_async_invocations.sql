-- +goose Up
-- Asynchronous invocations: a request accepted with 202 is a row here and a
-- River job (outbox.DeliverArgs) inserted in the same transaction, so
-- nothing is acknowledged that is not durable. The row keeps the request,
-- the state (queued, running, succeeded, failed, dead_lettered), every
-- attempt and the final response; the invocation log has a row per attempt
-- too (async_id, attempt). Like the invocation log, it is not derived from
-- events: the dead-letter steps append function events for the audit log.
-- Deleting a function deletes its rows in the same transaction.
CREATE TABLE async_invocations (
    id               uuid        PRIMARY KEY,
    namespace        text        NOT NULL,
    function         text        NOT NULL,
    idempotency_key  text,
    request_hash     bytea       NOT NULL,
    method           text        NOT NULL,
    path             text        NOT NULL,
    query            text        NOT NULL DEFAULT '',
    headers          jsonb       NOT NULL DEFAULT '{}',
    body             bytea       NOT NULL DEFAULT '',
    callback_url     text        NOT NULL DEFAULT '',
    remote_addr      text        NOT NULL DEFAULT '',   -- the caller's peer and Host, for the X-Forwarded-* of each delivery
    host             text        NOT NULL DEFAULT '',
    state            text        NOT NULL,
    attempts         jsonb       NOT NULL DEFAULT '[]',
    attempt_count    int         NOT NULL DEFAULT 0,
    attempt_base     int         NOT NULL DEFAULT 0,     -- attempt_count when last retried from the dead letters
    lease_until      timestamptz,
    response_status  int         NOT NULL DEFAULT 0,
    response_headers jsonb       NOT NULL DEFAULT '{}',
    response_body    bytea       NOT NULL DEFAULT '',
    error            text        NOT NULL DEFAULT '',
    callback_state   text        NOT NULL DEFAULT '',
    enqueued_at      timestamptz NOT NULL,
    requeued_at      timestamptz,            -- a dead letter retried: its age counts from here
    updated_at       timestamptz NOT NULL,
    finished_at      timestamptz
);
-- Idempotency keys are per function; a key older than 24 h is released
-- (set to NULL) by the enqueue that reuses it.
CREATE UNIQUE INDEX async_invocations_key ON async_invocations (namespace, function, idempotency_key)
    WHERE idempotency_key IS NOT NULL;
-- Dead letters and queued work of a function, newest first; running rows for
-- the concurrency bound.
CREATE INDEX async_invocations_state_idx ON async_invocations (namespace, function, state, enqueued_at);

ALTER TABLE invocations ADD COLUMN async_id uuid, ADD COLUMN attempt int NOT NULL DEFAULT 0;

-- A function's async configuration (domain.AsyncConfig as JSON); NULL takes the defaults.
ALTER TABLE functions ADD COLUMN async jsonb;

-- +goose Down
ALTER TABLE functions DROP COLUMN async;
ALTER TABLE invocations DROP COLUMN async_id, DROP COLUMN attempt;
DROP TABLE async_invocations;
