-- +goose Up
-- The invocation log: one row per function invocation (HTTP through the proxy,
-- cron slot, job run). It is not derived from events — invocations are too many
-- and too short-lived for the event store — and `projections rebuild` leaves it
-- alone. Rows are written in batches (store.InvocationWriter) into daily
-- partitions that store.EnsureInvocationPartitions creates ahead of time and
-- store.DropInvocationPartitionsBefore drops when they pass the retention.
-- No primary key: the id is a UUIDv7 whose time is started_at's millisecond,
-- and every lookup goes through (namespace, function, started_at), so a
-- unique index would only cost writes.
CREATE TABLE invocations (
    id           uuid        NOT NULL,
    namespace    text        NOT NULL,
    function     text        NOT NULL,
    version      int         NOT NULL DEFAULT 0,
    trigger_kind text        NOT NULL,            -- http | cron | job
    method       text        NOT NULL DEFAULT '',
    path         text        NOT NULL DEFAULT '',
    status       int         NOT NULL,            -- HTTP status; runs: 200 ok, 500 failed, 504 timed out
    duration_us  bigint      NOT NULL,
    cold_start   boolean     NOT NULL DEFAULT false,
    bytes_in     bigint      NOT NULL DEFAULT 0,
    bytes_out    bigint      NOT NULL DEFAULT 0,
    error        text        NOT NULL DEFAULT '',
    log          text        NOT NULL DEFAULT '',
    started_at   timestamptz NOT NULL,
    ended_at     timestamptz NOT NULL
) PARTITION BY RANGE (started_at);

-- Keyset pagination, newest first, is a backward scan of this index.
CREATE INDEX invocations_function_idx ON invocations (namespace, function, started_at, id);

-- +goose Down
DROP TABLE invocations;
