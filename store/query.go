package store

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/slessio/sless/domain"
)

// The read-model queries below return domain values; rows become values in one
// named scan function per table.

const functionColumns = `namespace, name, runtime, entrypoint, memory_mb, timeout_sec, env_vars, max_concurrency, retry_safe, phase, message,
	active_version, endpoint, serving_version, created_at, last_built_at, last_build_failure_version, last_build_failure_message, rollout_failure, async,
	min_instances, max_instances, concurrency, secrets, secret_files, secret_versions`

func scanFunction(row pgx.CollectableRow) (domain.Function, error) {
	var f domain.Function
	var env, async, secrets, secretVersions []byte
	var built *time.Time
	err := row.Scan(&f.Namespace, &f.Name, &f.Config.Runtime, &f.Config.Entrypoint, &f.Config.MemoryMB, &f.Config.TimeoutSec,
		&env, &f.Config.MaxConcurrency, &f.Config.RetrySafe, &f.Phase, &f.Message, &f.ActiveVersion, &f.Endpoint, &f.ServingVersion, &f.CreatedAt, &built,
		&f.LastBuildFailure.Version, &f.LastBuildFailure.Message, &f.RolloutFailure, &async,
		&f.Config.Scale.MinInstances, &f.Config.Scale.MaxInstances, &f.Config.Scale.Concurrency,
		&secrets, &f.Config.SecretFiles, &secretVersions)
	if err != nil {
		return f, err
	}
	if len(f.Config.SecretFiles) == 0 {
		f.Config.SecretFiles = nil
	}
	if err := unmarshalIfSet(secrets, &f.Config.Secrets); err != nil {
		return f, err
	}
	if err := unmarshalIfSet(secretVersions, &f.Config.SecretVersions); err != nil {
		return f, err
	}
	f.Exists = true
	if built != nil {
		f.LastBuiltAt = *built
	}
	f.CreatedAt = f.CreatedAt.UTC()
	f.LastBuiltAt = f.LastBuiltAt.UTC()
	if async != nil {
		if err := json.Unmarshal(async, &f.Config.Async); err != nil {
			return f, err
		}
	}
	return f, json.Unmarshal(env, &f.Config.EnvVars)
}

// unmarshalIfSet decodes a nullable jsonb column into dst; NULL leaves it.
func unmarshalIfSet(col []byte, dst any) error {
	if col == nil {
		return nil
	}
	return json.Unmarshal(col, dst)
}

// GetFunction returns the read model of one function (without its versions).
//
// Errors: ENOTFOUND, EUNAVAILABLE, EINTERNAL.
func (s *Store) GetFunction(ctx context.Context, ns, name string) (domain.Function, error) {
	rows, _ := s.pool.Query(ctx, `SELECT `+functionColumns+` FROM functions WHERE namespace = $1 AND name = $2`, ns, name)
	f, err := pgx.CollectExactlyOneRow(rows, scanFunction)
	return f, notFound(err, "function", name)
}

// ListFunctions returns the functions of a namespace ordered by name.
//
// Errors: EUNAVAILABLE, EINTERNAL.
func (s *Store) ListFunctions(ctx context.Context, ns string) ([]domain.Function, error) {
	rows, _ := s.pool.Query(ctx, `SELECT `+functionColumns+` FROM functions WHERE namespace = $1 ORDER BY name`, ns)
	fs, err := pgx.CollectRows(rows, scanFunction)
	return fs, dbError("list functions", err)
}

// ListAllFunctions returns every function of every namespace (for drivers and the proxy's route table).
//
// Errors: EUNAVAILABLE, EINTERNAL.
func (s *Store) ListAllFunctions(ctx context.Context) ([]domain.Function, error) {
	rows, _ := s.pool.Query(ctx, `SELECT `+functionColumns+` FROM functions ORDER BY namespace, name`)
	fs, err := pgx.CollectRows(rows, scanFunction)
	return fs, dbError("list functions", err)
}

const versionColumns = `version, digest, zip_key, context_key, config, build_status, image, message, build_log, created_at, built_at`

func scanVersion(row pgx.CollectableRow) (domain.Version, error) {
	var v domain.Version
	var cfg []byte
	var built *time.Time
	err := row.Scan(&v.Number, &v.Digest, &v.ZipKey, &v.ContextKey, &cfg, &v.BuildStatus, &v.Image, &v.Message, &v.BuildLog, &v.CreatedAt, &built)
	if err != nil {
		return v, err
	}
	if built != nil {
		v.BuiltAt = built.UTC()
	}
	v.CreatedAt = v.CreatedAt.UTC()
	return v, json.Unmarshal(cfg, &v.Config)
}

// ListVersions returns the versions of a function, newest first.
//
// Errors: EUNAVAILABLE, EINTERNAL.
func (s *Store) ListVersions(ctx context.Context, ns, function string) ([]domain.Version, error) {
	rows, _ := s.pool.Query(ctx, `SELECT `+versionColumns+` FROM function_versions
		WHERE namespace = $1 AND function = $2 ORDER BY version DESC`, ns, function)
	vs, err := pgx.CollectRows(rows, scanVersion)
	return vs, dbError("list versions", err)
}

// GetVersion returns version n of a function; while it builds, its BuildLog
// is the build's output so far (AppendBuildProgress).
//
// Errors: ENOTFOUND, EUNAVAILABLE, EINTERNAL.
func (s *Store) GetVersion(ctx context.Context, ns, function string, n int) (domain.Version, error) {
	rows, _ := s.pool.Query(ctx, `SELECT `+versionColumns+` FROM function_versions
		WHERE namespace = $1 AND function = $2 AND version = $3`, ns, function, n)
	v, err := pgx.CollectExactlyOneRow(rows, scanVersion)
	if err == nil && v.BuildStatus == domain.BuildStatusBuilding {
		// While it builds, its log is the output so far.
		v.BuildLog, err = s.buildProgress(ctx, ns, function, n)
	}
	return v, notFound(err, "version", function)
}

// Activation is one entry of a function's activation history: who made which
// version active, when, and from which.
type Activation struct {
	Version     int       `json:"version"`
	FromVersion int       `json:"from_version"`
	Reason      string    `json:"reason"`
	Actor       string    `json:"actor"`
	ActivatedAt time.Time `json:"activated_at"`
}

// ListActivations returns the activation history of a function, newest first.
//
// Errors: EUNAVAILABLE, EINTERNAL.
func (s *Store) ListActivations(ctx context.Context, ns, function string) ([]Activation, error) {
	rows, _ := s.pool.Query(ctx, `SELECT version, from_version, reason, actor, activated_at FROM activations
		WHERE namespace = $1 AND function = $2 ORDER BY position DESC`, ns, function)
	as, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Activation, error) {
		var a Activation
		err := row.Scan(&a.Version, &a.FromVersion, &a.Reason, &a.Actor, &a.ActivatedAt)
		a.ActivatedAt = a.ActivatedAt.UTC()
		return a, err
	})
	return as, dbError("list activations", err)
}

const triggerColumns = `namespace, name, type, function, schedule, enabled, active, created_at`

func scanTrigger(row pgx.CollectableRow) (domain.Trigger, error) {
	var t domain.Trigger
	err := row.Scan(&t.Namespace, &t.Name, &t.Type, &t.Function, &t.Schedule, &t.Enabled, &t.Active, &t.CreatedAt)
	t.Exists = true
	t.CreatedAt = t.CreatedAt.UTC()
	return t, err
}

// GetTrigger returns the read model of one trigger.
//
// Errors: ENOTFOUND, EUNAVAILABLE, EINTERNAL.
func (s *Store) GetTrigger(ctx context.Context, ns, name string) (domain.Trigger, error) {
	rows, _ := s.pool.Query(ctx, `SELECT `+triggerColumns+` FROM triggers WHERE namespace = $1 AND name = $2`, ns, name)
	t, err := pgx.CollectExactlyOneRow(rows, scanTrigger)
	return t, notFound(err, "trigger", name)
}

// ListTriggers returns the triggers of a namespace by name; with function set,
// only that function's.
//
// Errors: EUNAVAILABLE, EINTERNAL.
func (s *Store) ListTriggers(ctx context.Context, ns, function string) ([]domain.Trigger, error) {
	rows, _ := s.pool.Query(ctx, `SELECT `+triggerColumns+` FROM triggers
		WHERE namespace = $1 AND ($2 = '' OR function = $2) ORDER BY name`, ns, function)
	ts, err := pgx.CollectRows(rows, scanTrigger)
	return ts, dbError("list triggers", err)
}

// CronTrigger is a cron trigger that fires, with when it became active:
// slots before that never fire.
type CronTrigger struct {
	domain.Trigger
	ActiveSince time.Time
	// LastFired is the last slot enqueued for it (RecordFiredSlotsTx); zero
	// when none is recorded.
	LastFired time.Time
}

// ListFiringCronTriggers returns, in one query, the cron triggers that fire:
// enabled, active, of a function with an active version; ordered by
// namespace and name; each with the last slot fired.
//
// Errors: EUNAVAILABLE, EINTERNAL.
func (s *Store) ListFiringCronTriggers(ctx context.Context) ([]CronTrigger, error) {
	rows, _ := s.pool.Query(ctx, `SELECT t.namespace, t.name, t.type, t.function, t.schedule, t.enabled, t.active, t.created_at,
			coalesce(t.active_since, '-infinity'), coalesce(c.slot, '-infinity')
		FROM triggers t JOIN functions f ON f.namespace = t.namespace AND f.name = t.function
		LEFT JOIN cron_fired c ON c.namespace = t.namespace AND c.trigger = t.name
		WHERE t.type = '`+string(domain.TriggerCron)+`' AND t.enabled AND t.active AND f.active_version > 0
		ORDER BY t.namespace, t.name`)
	finite := func(t pgtype.Timestamptz) time.Time {
		if t.Valid && t.InfinityModifier == pgtype.Finite {
			return t.Time.UTC()
		}
		return time.Time{}
	}
	ts, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (CronTrigger, error) {
		var c CronTrigger
		var since, fired pgtype.Timestamptz
		err := row.Scan(&c.Namespace, &c.Name, &c.Type, &c.Function, &c.Schedule, &c.Enabled, &c.Active, &c.CreatedAt, &since, &fired)
		c.Exists, c.CreatedAt = true, c.CreatedAt.UTC()
		c.ActiveSince, c.LastFired = finite(since), finite(fired)
		return c, err
	})
	return ts, dbError("list firing cron triggers", err)
}

const jobColumns = `namespace, name, function, event, run_id, phase, version, message, output, started_at, completed_at, created_at`

func scanJob(row pgx.CollectableRow) (domain.Job, error) {
	var j domain.Job
	var event []byte
	var started, completed *time.Time
	err := row.Scan(&j.Namespace, &j.Name, &j.Function, &event, &j.RunID, &j.Phase, &j.Version, &j.Message, &j.Output,
		&started, &completed, &j.CreatedAt)
	j.Exists, j.Event, j.CreatedAt = true, event, j.CreatedAt.UTC()
	if started != nil {
		j.StartedAt = started.UTC()
	}
	if completed != nil {
		j.CompletedAt = completed.UTC()
	}
	return j, err
}

// GetJob returns the read model of one job.
//
// Errors: ENOTFOUND, EUNAVAILABLE, EINTERNAL.
func (s *Store) GetJob(ctx context.Context, ns, name string) (domain.Job, error) {
	rows, _ := s.pool.Query(ctx, `SELECT `+jobColumns+` FROM jobs WHERE namespace = $1 AND name = $2`, ns, name)
	j, err := pgx.CollectExactlyOneRow(rows, scanJob)
	return j, notFound(err, "job", name)
}

// ListJobs returns the jobs of a namespace by name; with function set, only that function's.
//
// Errors: EUNAVAILABLE, EINTERNAL.
func (s *Store) ListJobs(ctx context.Context, ns, function string) ([]domain.Job, error) {
	return listJobs(ctx, s.pool, ns, function)
}

// ListJobs is Store.ListJobs inside the command's transaction, so a command
// reads what it is about to change on its own connection.
//
// Errors: EUNAVAILABLE, EINTERNAL.
func (t *Tx) ListJobs(ctx context.Context, ns, function string) ([]domain.Job, error) {
	return listJobs(ctx, t, ns, function)
}

func listJobs(ctx context.Context, q querier, ns, function string) ([]domain.Job, error) {
	rows, _ := q.Query(ctx, `SELECT `+jobColumns+` FROM jobs
		WHERE namespace = $1 AND ($2 = '' OR function = $2) ORDER BY name`, ns, function)
	js, err := pgx.CollectRows(rows, scanJob)
	return js, dbError("list jobs", err)
}

// NamespaceInfo is a tenant namespace as operators list it.
type NamespaceInfo struct {
	Name      string    `json:"name"`
	CreatedAt time.Time `json:"created_at"`
	Functions int       `json:"functions"`
}

// ListNamespaces returns every ensured namespace with its function count (operators only).
//
// Errors: EUNAVAILABLE, EINTERNAL.
func (s *Store) ListNamespaces(ctx context.Context) ([]NamespaceInfo, error) {
	rows, _ := s.pool.Query(ctx, `SELECT n.name, n.created_at, (SELECT count(*) FROM functions f WHERE f.namespace = n.name)
		FROM namespaces n ORDER BY n.name`)
	ns, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (NamespaceInfo, error) {
		var n NamespaceInfo
		err := row.Scan(&n.Name, &n.CreatedAt, &n.Functions)
		n.CreatedAt = n.CreatedAt.UTC()
		return n, err
	})
	return ns, dbError("list namespaces", err)
}

// Ping checks that the database answers (readiness).
//
// Errors: EUNAVAILABLE.
func (s *Store) Ping(ctx context.Context) error {
	return dbError("ping", s.pool.Ping(ctx))
}

// notFound turns "no row" into ENOTFOUND naming the thing, other errors as dbError does.
func notFound(err error, what, name string) error {
	if errors.Is(err, pgx.ErrNoRows) {
		return domain.Errorf(domain.ENOTFOUND, "%s %q not found", what, name)
	}
	return dbError("get "+what, err)
}

// ListTriggers is Store.ListTriggers inside the command's transaction, so a
// command reads what it is about to change on its own connection.
//
// Errors: EUNAVAILABLE, EINTERNAL.
func (t *Tx) ListTriggers(ctx context.Context, ns, function string) ([]domain.Trigger, error) {
	rows, _ := t.Query(ctx, `SELECT `+triggerColumns+` FROM triggers
		WHERE namespace = $1 AND ($2 = '' OR function = $2) ORDER BY name`, ns, function)
	ts, err := pgx.CollectRows(rows, scanTrigger)
	return ts, dbError("list triggers", err)
}
