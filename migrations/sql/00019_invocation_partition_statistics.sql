-- +goose Up
-- Statistics of namespace and function together on every daily partition
-- of the invocation log that exists (store.EnsureInvocationPartitions gives
-- them to the partitions it creates from now on; see partitionStatistics
-- there for why: the planner took the two as independent, expected a few
-- rows of a busy function and sorted all of them for its last 100).
-- ANALYZE of each partition (autovacuum's, or this one's for the days
-- already written) fills them in.
-- +goose StatementBegin
DO $$
DECLARE
	p text;
BEGIN
	FOR p IN SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
		WHERE i.inhparent = 'invocations'::regclass
	LOOP
		EXECUTE format('CREATE STATISTICS IF NOT EXISTS %I (dependencies, ndistinct) ON namespace, function FROM %I',
			p || '_function_stats', p);
		EXECUTE format('ANALYZE %I', p);
	END LOOP;
END $$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
DO $$
DECLARE
	s text;
BEGIN
	FOR s IN SELECT stxname FROM pg_statistic_ext WHERE stxname LIKE 'invocations_p%_function_stats'
	LOOP
		EXECUTE format('DROP STATISTICS %I', s);
	END LOOP;
END $$;
-- +goose StatementEnd
