-- +goose Up
-- The last slot the cron tick enqueued for each trigger, written in the
-- transaction that inserts the slot's cron_run job. The tick read it from
-- River's completed cron_run jobs (kept 24 h), grouping their JSON args:
-- with 10,000 triggers that is about 800,000 rows and 0.6–1.3 s a tick
-- (store/storebench, BenchmarkCronTick), growing with the triggers and
-- their firings. Not a projection (a slot fired is no event): a trigger
-- without a row here (a new one, or all of them once after this migration)
-- starts from its activation or the catch-up window, whose slots already
-- enqueued River's unique key (trigger, slot) keeps from running twice.
CREATE TABLE cron_fired (
	namespace text NOT NULL,
	trigger   text NOT NULL,
	slot      timestamptz NOT NULL,
	PRIMARY KEY (namespace, trigger)
);

-- +goose Down
DROP TABLE cron_fired;
