-- +goose Up
-- What a function's phase no longer carries (domain.Function): the newest
-- version's failed build (LastBuildFailure), shown beside a phase that says
-- what serves, and why the active version's last rollout failed
-- (RolloutFailure). Older rows are backfilled from the versions and the
-- phase: a Failed function with an active version whose message is the
-- newest version's build failure is Ready (that build no longer fails it),
-- any other Failed one with an active version failed its rollout. `sless
-- projections rebuild` recomputes all of it from the events.
ALTER TABLE functions
    ADD COLUMN last_build_failure_version integer NOT NULL DEFAULT 0,
    ADD COLUMN last_build_failure_message text NOT NULL DEFAULT '',
    ADD COLUMN rollout_failure text NOT NULL DEFAULT '';

UPDATE functions f SET last_build_failure_version = v.version, last_build_failure_message = v.message
FROM (SELECT DISTINCT ON (namespace, function) namespace, function, version, build_status, message
      FROM function_versions ORDER BY namespace, function, version DESC) v
WHERE v.namespace = f.namespace AND v.function = f.name AND v.build_status = 'Failed';

UPDATE functions SET rollout_failure = message
WHERE phase = 'Failed' AND active_version > 0
  AND NOT (last_build_failure_version > 0 AND message = last_build_failure_message);

UPDATE functions SET phase = 'Ready', message = ''
WHERE phase = 'Failed' AND active_version > 0
  AND last_build_failure_version > 0 AND message = last_build_failure_message;

-- +goose Down
ALTER TABLE functions
    DROP COLUMN last_build_failure_version,
    DROP COLUMN last_build_failure_message,
    DROP COLUMN rollout_failure;
