-- +goose Up
-- When each trigger last became active (NULL while it is not), so the cron
-- enqueuer reads every firing trigger with one query per tick instead of
-- replaying each trigger's stream. Triggers active before this migration get
-- it from their events: the latest trigger.active_changed to true (a trigger
-- that is active now became so after its latest creation, so the latest one
-- is after any re-creation).
ALTER TABLE triggers ADD COLUMN active_since timestamptz;
UPDATE triggers t SET active_since = (
    SELECT max((e.data->>'at')::timestamptz) FROM events e
    WHERE e.stream_id = 'trigger:' || t.namespace || '/' || t.name
      AND e.type = 'trigger.active_changed' AND (e.data->>'active')::boolean)
WHERE t.active;
CREATE INDEX triggers_firing_cron ON triggers (namespace, name) WHERE type = 'cron' AND enabled AND active;

-- +goose Down
DROP INDEX triggers_firing_cron;
ALTER TABLE triggers DROP COLUMN active_since;
