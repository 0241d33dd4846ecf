-- +goose Up
-- Read models. Every table here is derived from the events table: projections
-- update them in the append transaction, and `sless projections rebuild`
-- truncates and replays them (see store/projection.go).

CREATE TABLE namespaces (
    name       text PRIMARY KEY,
    created_at timestamptz NOT NULL
);

CREATE TABLE functions (
    namespace      text        NOT NULL,
    name           text        NOT NULL,
    runtime        text        NOT NULL,
    entrypoint     text        NOT NULL,
    memory_mb      int         NOT NULL,
    timeout_sec    int         NOT NULL,
    env_vars       jsonb       NOT NULL DEFAULT '{}',
    phase          text        NOT NULL,
    message        text        NOT NULL DEFAULT '',
    active_version int         NOT NULL DEFAULT 0,
    endpoint       text        NOT NULL DEFAULT '',
    created_at     timestamptz NOT NULL,
    last_built_at  timestamptz,
    PRIMARY KEY (namespace, name)
);

CREATE TABLE function_versions (
    namespace    text        NOT NULL,
    function     text        NOT NULL,
    version      int         NOT NULL,
    digest       text        NOT NULL,
    zip_key      text        NOT NULL DEFAULT '',
    context_key  text        NOT NULL DEFAULT '',
    config       jsonb       NOT NULL,
    build_status text        NOT NULL,
    image        text        NOT NULL DEFAULT '',
    message      text        NOT NULL DEFAULT '',
    build_log    text        NOT NULL DEFAULT '',
    created_at   timestamptz NOT NULL,
    built_at     timestamptz,
    PRIMARY KEY (namespace, function, version)
);

CREATE TABLE activations (
    position     bigint      PRIMARY KEY, -- the event's global position
    namespace    text        NOT NULL,
    function     text        NOT NULL,
    version      int         NOT NULL,
    from_version int         NOT NULL,
    reason       text        NOT NULL,
    actor        text        NOT NULL DEFAULT '',
    activated_at timestamptz NOT NULL
);
CREATE INDEX activations_function ON activations (namespace, function, position);

CREATE TABLE triggers (
    namespace  text        NOT NULL,
    name       text        NOT NULL,
    type       text        NOT NULL,
    function   text        NOT NULL,
    schedule   text        NOT NULL DEFAULT '',
    enabled    boolean     NOT NULL,
    active     boolean     NOT NULL DEFAULT false,
    created_at timestamptz NOT NULL,
    PRIMARY KEY (namespace, name)
);
CREATE INDEX triggers_function ON triggers (namespace, function);

CREATE TABLE jobs (
    namespace    text        NOT NULL,
    name         text        NOT NULL,
    function     text        NOT NULL,
    event        jsonb       NOT NULL,
    run_id       bigint      NOT NULL DEFAULT 0,
    phase        text        NOT NULL,
    version      int         NOT NULL DEFAULT 0,
    message      text        NOT NULL DEFAULT '',
    output       text        NOT NULL DEFAULT '',
    started_at   timestamptz,
    completed_at timestamptz,
    created_at   timestamptz NOT NULL,
    PRIMARY KEY (namespace, name)
);

-- +goose Down
DROP TABLE jobs;
DROP TABLE triggers;
DROP TABLE activations;
DROP TABLE function_versions;
DROP TABLE functions;
DROP TABLE namespaces;
