-- +goose Up
-- The output of builds that are running, for people to follow (`sless fn
-- deploy` prints it as it comes; GET .../versions/{n} shows it as the
-- version's build_log while it builds). Not a read model: the whole log is in
-- the build's outcome event, and a row is removed once that is recorded.
CREATE TABLE build_progress (
    namespace  text        NOT NULL,
    function   text        NOT NULL,
    version    integer     NOT NULL,
    log        text        NOT NULL DEFAULT '',
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (namespace, function, version)
);

-- +goose Down
DROP TABLE build_progress;
