-- +goose Up
-- The invocation log's index becomes unique, so that a batch written again
-- (replayed from the writer's on-disk spool after the database came back, or
-- re-sent after a write whose answer was lost) skips the records stored
-- already: INSERT … ON CONFLICT DO NOTHING. An id is unique on its own; the
-- index must hold the partition key (started_at), and (namespace, function,
-- started_at, id) is the index every lookup used already, so uniqueness
-- costs a write nothing more than the index did.
CREATE UNIQUE INDEX invocations_function_key ON invocations (namespace, function, started_at, id);
DROP INDEX invocations_function_idx;
ALTER INDEX invocations_function_key RENAME TO invocations_function_idx;

-- +goose Down
CREATE INDEX invocations_function_plain ON invocations (namespace, function, started_at, id);
DROP INDEX invocations_function_idx;
ALTER INDEX invocations_function_plain RENAME TO invocations_function_idx;
