-- +goose Up
-- The version a function's last completed rollout runs (domain.Function.
-- ServingVersion), so callers can wait until a new version serves. Older rows
-- are backfilled with the active version of a Ready function; `sless
-- projections rebuild` recomputes it from the events.
ALTER TABLE functions ADD COLUMN serving_version integer NOT NULL DEFAULT 0;
UPDATE functions SET serving_version = active_version WHERE phase = 'Ready';

-- +goose Down
ALTER TABLE functions DROP COLUMN serving_version;
