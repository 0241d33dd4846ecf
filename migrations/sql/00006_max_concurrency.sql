-- +goose Up
-- A function's max_concurrency (0: the platform's default), which the invoke
-- proxy enforces; older events carry none, so 0 is also the backfill.
ALTER TABLE functions ADD COLUMN max_concurrency integer NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE functions DROP COLUMN max_concurrency;
