-- +goose Up
-- The event store: one row per event, the source of truth of sless.
-- position orders all events (it is taken before commit, so it may commit out of
-- order); tx_id lets readers follow the log without skipping such events
-- (see store.ReadAll); (stream_id, stream_version) gives optimistic concurrency.
CREATE TABLE events (
    position       bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tx_id          xid8        NOT NULL DEFAULT pg_current_xact_id(),
    stream_id      text        NOT NULL CHECK (stream_id <> ''),
    stream_version bigint      NOT NULL CHECK (stream_version > 0),
    namespace      text        NOT NULL DEFAULT '',
    type           text        NOT NULL CHECK (type <> ''),
    data           jsonb       NOT NULL,
    metadata       jsonb       NOT NULL DEFAULT '{}',
    recorded_at    timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT events_stream_version_key UNIQUE (stream_id, stream_version)
);

CREATE INDEX events_tx_id_position_idx ON events (tx_id, position);
CREATE INDEX events_namespace_position_idx ON events (namespace, position);

-- +goose Down
DROP TABLE events;
