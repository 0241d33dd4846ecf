-- +goose Up
-- A function's errors, newest first: ListInvocations with a status filter
-- of 400 and above (GET .../invocations?status=error, 4xx, 5xx or one
-- error status, and the console's errors) reads this partial index of the
-- error rows alone. Through invocations_function_idx it read every row of
-- the function in the time range and filtered out the successes: for a
-- function with 13 % of 10 M rows over 14 days, 3,900 rows on 825 heap
-- pages for the 90 errors of its last hour, 9 ms from memory and 63 ms
-- from disk; 0.3 and 1 ms with this index, which reads the 90
-- (store/storebench, BenchmarkInvocationQueries). It holds about 2 % of the
-- rows, so the writer's COPY barely pays for it. The planner uses it when
-- it plans for the status given (a custom plan): a status >= 400 bound
-- implies the index's predicate.
--
-- CREATE INDEX on the partitioned table builds it on every daily partition
-- (new partitions get it at creation) and holds each partition's writes
-- while it builds: 3 s for 10 M rows on a small machine, during which the
-- invocation writer's batches wait (with a spool, after 2 s they go to it).
CREATE INDEX invocations_errors_idx ON invocations (namespace, function, started_at, id) WHERE status >= 400;

-- +goose Down
DROP INDEX invocations_errors_idx;
