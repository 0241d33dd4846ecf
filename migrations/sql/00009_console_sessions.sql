-- +goose Up
-- Sessions of the web console (store.CreateSession), kept server-side so that
-- signing out refuses the cookie from then on. The key is the SHA-256 of the
-- session id: the id itself, which the cookie carries, is never stored.
-- CreateSession deletes the rows that expired more than an hour before, by
-- expires_at.
CREATE TABLE console_sessions (
    id_hash    bytea       PRIMARY KEY CHECK (length(id_hash) = 32),
    subject    text        NOT NULL,
    namespace  text        NOT NULL,
    admin      boolean     NOT NULL,
    csrf       text        NOT NULL,
    created_at timestamptz NOT NULL,
    expires_at timestamptz NOT NULL
);
CREATE INDEX console_sessions_expires_at_idx ON console_sessions (expires_at);

-- Following one namespace's events (store.ReadNamespaceSince, NamespaceHead)
-- in the (tx_id, position) order of ReadAll: a range scan from the cursor.
-- Without it a reader either scans the whole log from its cursor, dropping
-- the other namespaces' events, or reads all of its namespace and sorts.
CREATE INDEX events_namespace_tx_id_position_idx ON events (namespace, tx_id, position);

-- +goose Down
DROP INDEX events_namespace_tx_id_position_idx;
DROP TABLE console_sessions;
