package store

// FunctionStatsSQL is the query whose plan invocation_stats_test.go checks.
const FunctionStatsSQL = functionStatsSQL
