package store

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/slessio/sless/domain"
)

// projectionTables lists every read model, in an order safe to truncate.
var projectionTables = []string{"namespaces", "functions", "function_versions", "activations", "triggers", "jobs"}

// Project updates the read models for one appended event, inside the append
// transaction (read-your-writes). It is the projector the Store installs.
// Times come from the event payloads, so a rebuild yields identical rows.
func Project(ctx context.Context, tx pgx.Tx, ev Event) error {
	de, err := domain.DecodeEvent(ev.Type, ev.Data)
	if err != nil {
		return err
	}
	ns, name := splitStream(ev.StreamID)
	var sql string
	var args []any
	switch e := de.(type) {
	case domain.NamespaceEnsured:
		sql, args = `INSERT INTO namespaces (name, created_at) VALUES ($1, $2) ON CONFLICT DO NOTHING`, []any{e.Namespace, e.At}
	case domain.FunctionCreated:
		sql = `INSERT INTO functions (namespace, name, runtime, entrypoint, memory_mb, timeout_sec, env_vars, max_concurrency, retry_safe, phase, created_at)
		       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, 'Pending', $10)`
		args = append([]any{ns, name}, configArgs(e.Config)...)
		args = append(args, e.At)
	case domain.FunctionConfigUpdated:
		sql = `UPDATE functions SET runtime = $3, entrypoint = $4, memory_mb = $5, timeout_sec = $6, env_vars = $7, max_concurrency = $8,
		                            retry_safe = $9
		       WHERE namespace = $1 AND name = $2`
		args = append([]any{ns, name}, configArgs(e.Config)...)
	case domain.FunctionDeleted:
		sql = `WITH v AS (DELETE FROM function_versions WHERE namespace = $1 AND function = $2),
		            a AS (DELETE FROM activations WHERE namespace = $1 AND function = $2)
		       DELETE FROM functions WHERE namespace = $1 AND name = $2`
		args = []any{ns, name}
	case domain.VersionCreated:
		cfg, _ := json.Marshal(e.Config)
		sql = `WITH v AS (INSERT INTO function_versions (namespace, function, version, digest, zip_key, context_key, config, build_status, created_at)
		                  VALUES ($1, $2, $10, $11, $12, $13, $14, 'Queued', $15))
		       UPDATE functions SET runtime = $3, entrypoint = $4, memory_mb = $5, timeout_sec = $6, env_vars = $7, max_concurrency = $8,
		                            retry_safe = $9, phase = 'Building', message = ''
		       WHERE namespace = $1 AND name = $2`
		args = append([]any{ns, name}, configArgs(e.Config)...)
		args = append(args, e.Version, e.Digest, e.ZipKey, e.ContextKey, cfg, e.At)
	case domain.BuildStarted:
		sql = `UPDATE function_versions SET build_status = 'Building' WHERE namespace = $1 AND function = $2 AND version = $3`
		args = []any{ns, name, e.Version}
	case domain.BuildSucceeded:
		sql = `WITH f AS (UPDATE functions SET last_built_at = $6 WHERE namespace = $1 AND name = $2)
		       UPDATE function_versions SET build_status = 'Succeeded', image = $4, message = '', build_log = $5, built_at = $6
		       WHERE namespace = $1 AND function = $2 AND version = $3`
		args = []any{ns, name, e.Version, e.Image, e.Log, e.At}
	case domain.BuildFailed:
		// Only a failure of the newest version makes the function Failed: an old
		// build finishing late must not hide the newer state.
		sql = `WITH f AS (UPDATE functions SET last_built_at = $6,
		                      phase   = CASE WHEN $3 = (SELECT max(version) FROM function_versions WHERE namespace = $1 AND function = $2) THEN 'Failed' ELSE phase END,
		                      message = CASE WHEN $3 = (SELECT max(version) FROM function_versions WHERE namespace = $1 AND function = $2) THEN $4 ELSE message END
		                  WHERE namespace = $1 AND name = $2)
		       UPDATE function_versions SET build_status = 'Failed', message = $4, build_log = $5, built_at = $6
		       WHERE namespace = $1 AND function = $2 AND version = $3`
		args = []any{ns, name, e.Version, e.Message, e.Log, e.At}
	case domain.VersionActivated:
		sql = `WITH a AS (INSERT INTO activations (position, namespace, function, version, from_version, reason, actor, activated_at)
		                  VALUES ($4, $1, $2, $3, $5, $6, $7, $8))
		       UPDATE functions SET active_version = $3, phase = 'Ready', message = '' WHERE namespace = $1 AND name = $2`
		if e.Reason == domain.ActivationRollback { // the version's configuration comes back (domain.Function.Apply)
			sql = `WITH a AS (INSERT INTO activations (position, namespace, function, version, from_version, reason, actor, activated_at)
			                  VALUES ($4, $1, $2, $3, $5, $6, $7, $8))
			       UPDATE functions f SET active_version = $3, phase = 'Ready', message = '',` + versionConfigSet + `
			       FROM (VALUES (1)) one LEFT JOIN function_versions v ON v.namespace = $1 AND v.function = $2 AND v.version = $3
			       WHERE f.namespace = $1 AND f.name = $2`
		}
		args = []any{ns, name, e.Version, ev.Position, e.From, e.Reason, ev.Metadata.Actor, e.At}
	case domain.RolloutCompleted:
		sql = `UPDATE functions SET endpoint = $4, serving_version = $3,
		                            phase   = CASE WHEN phase = 'Building' THEN phase ELSE 'Ready' END,
		                            message = CASE WHEN phase = 'Building' THEN message ELSE '' END
		       WHERE namespace = $1 AND name = $2 AND active_version = $3`
		args = []any{ns, name, e.Version, e.Endpoint}
	case domain.RolloutFailed:
		sql = `UPDATE functions SET endpoint = '', serving_version = 0, phase = 'Failed', message = $4
		       WHERE namespace = $1 AND name = $2 AND active_version = $3`
		args = []any{ns, name, e.Version, e.Message}
	case domain.TriggerCreated:
		sql = `INSERT INTO triggers (namespace, name, type, function, schedule, enabled, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7)`
		args = []any{ns, name, string(e.Type), e.Function, e.Schedule, e.Enabled, e.At}
	case domain.TriggerEnabled:
		sql, args = `UPDATE triggers SET enabled = true WHERE namespace = $1 AND name = $2`, []any{ns, name}
	case domain.TriggerDisabled:
		sql, args = `UPDATE triggers SET enabled = false WHERE namespace = $1 AND name = $2`, []any{ns, name}
	case domain.TriggerActiveChanged:
		sql = `UPDATE triggers SET active = $3, active_since = CASE WHEN $3 THEN $4::timestamptz END WHERE namespace = $1 AND name = $2`
		args = []any{ns, name, e.Active, e.At}
	case domain.TriggerDeleted:
		sql, args = `DELETE FROM triggers WHERE namespace = $1 AND name = $2`, []any{ns, name}
	case domain.JobCreated:
		sql = `INSERT INTO jobs (namespace, name, function, event, phase, created_at) VALUES ($1, $2, $3, $4, 'Pending', $5)`
		args = []any{ns, name, e.Function, []byte(e.Event), e.At}
	case domain.JobRunRequested:
		sql = `UPDATE jobs SET run_id = $3, phase = 'Pending', version = 0, message = '', output = '', started_at = NULL, completed_at = NULL
		       WHERE namespace = $1 AND name = $2`
		args = []any{ns, name, e.RunID}
	case domain.JobStarted:
		sql = `UPDATE jobs SET phase = 'Running', version = $4, started_at = $5 WHERE namespace = $1 AND name = $2 AND run_id = $3`
		args = []any{ns, name, e.RunID, e.Version, e.At}
	case domain.JobSucceeded:
		sql = `UPDATE jobs SET phase = 'Succeeded', message = $4, output = $5, completed_at = $6 WHERE namespace = $1 AND name = $2 AND run_id = $3`
		args = []any{ns, name, e.RunID, e.Result, e.Output, e.At}
	case domain.JobFailed:
		sql = `UPDATE jobs SET phase = 'Failed', message = $4, output = $5, completed_at = $6 WHERE namespace = $1 AND name = $2 AND run_id = $3`
		args = []any{ns, name, e.RunID, e.Message, e.Output, e.At}
	case domain.JobDeleted:
		sql, args = `DELETE FROM jobs WHERE namespace = $1 AND name = $2`, []any{ns, name}
	default:
		return domain.Errorf(domain.EINTERNAL, "no projection for event type %q", ev.Type)
	}
	if _, ok := de.(domain.TriggerDeleted); ok { // the route notice needs the row
		if err := notifyTriggerRoute(ctx, tx, ns, name); err != nil {
			return fmt.Errorf("notify route of %s: %w", ev.StreamID, err)
		}
	}
	if _, err := tx.Exec(ctx, sql, args...); err != nil {
		return fmt.Errorf("project %s of %s: %w", ev.Type, ev.StreamID, err)
	}
	if err := notifyRouteOf(ctx, tx, de, ns, name); err != nil {
		return fmt.Errorf("notify route of %s: %w", ev.StreamID, err)
	}
	return nil
}

// notifyRouteOf announces, for the invoke proxy, the function whose route an
// event may change (see RoutesChannel): every function event, and the
// creation, enabling and disabling of http triggers.
func notifyRouteOf(ctx context.Context, tx pgx.Tx, de domain.Event, ns, name string) error {
	switch e := de.(type) {
	case domain.FunctionCreated, domain.FunctionConfigUpdated, domain.FunctionDeleted, domain.VersionCreated,
		domain.BuildFailed, domain.VersionActivated, domain.RolloutCompleted, domain.RolloutFailed:
		return notifyRoute(ctx, tx, ns, name)
	case domain.TriggerCreated:
		if e.Type == domain.TriggerHTTP {
			return notifyRoute(ctx, tx, ns, e.Function)
		}
	case domain.TriggerEnabled, domain.TriggerDisabled:
		return notifyTriggerRoute(ctx, tx, ns, name)
	}
	return nil
}

// versionConfigSet sets the configuration columns of functions f from the
// config snapshot of version v, as configArgs would from the domain value
// (omitted zero values included); a missing version leaves them as they are.
const versionConfigSet = `
	runtime         = coalesce(v.config->>'runtime', f.runtime),
	entrypoint      = coalesce(v.config->>'entrypoint', f.entrypoint),
	memory_mb       = coalesce((v.config->>'memory_mb')::int, f.memory_mb),
	timeout_sec     = coalesce((v.config->>'timeout_sec')::int, f.timeout_sec),
	env_vars        = coalesce(v.config->'env_vars', f.env_vars),
	max_concurrency = CASE WHEN v.config IS NULL THEN f.max_concurrency ELSE coalesce((v.config->>'max_concurrency')::int, 0) END,
	retry_safe      = CASE WHEN v.config IS NULL THEN f.retry_safe ELSE coalesce((v.config->>'retry_safe')::boolean, false) END`

func configArgs(c domain.FunctionConfig) []any {
	env, _ := json.Marshal(c.EnvVars)
	return []any{string(c.Runtime), c.Entrypoint, c.MemoryMB, c.TimeoutSec, env, c.MaxConcurrency, c.RetrySafe}
}

// splitStream returns the namespace and name of a "<kind>:<namespace>/<name>" stream id.
func splitStream(id string) (ns, name string) {
	_, rest, _ := strings.Cut(id, ":")
	ns, name, _ = strings.Cut(rest, "/")
	return ns, name
}
