-- +goose Up
-- A function's retry_safe: whether a job run interrupted by a server shutdown
-- is run again (true) or fails with "interrupted by shutdown" (false). Older
-- events carry none, so false is also the backfill.
ALTER TABLE functions ADD COLUMN retry_safe boolean NOT NULL DEFAULT false;

-- +goose Down
ALTER TABLE functions DROP COLUMN retry_safe;
