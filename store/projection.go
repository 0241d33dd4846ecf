package store

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/slessio/sless/domain"
)

// projectionTables lists every read model, in an order safe to truncate.
var projectionTables = []string{"namespaces", "functions", "function_versions", "activations", "triggers", "jobs", "secrets"}

// Project updates the read models for events just appended to one stream,
// inside the append transaction (read-your-writes). It is the projector the
// Store installs.
//
// The rows of an object (a function and its versions, a trigger, a job) are
// written from state, the stream's aggregate folded through the last of evs,
// so the read model says what domain's Apply says and no lifecycle rule (a
// phase, a late build result, a rollout of an older version) is written a
// second time in SQL. Only history rows (activations, a namespace's first
// sighting) and the times kept beside the state come from the events. With a
// nil state (Store.Append of domain events) Project folds the stream itself.
// Every statement goes to the database in one round trip.
func Project(ctx context.Context, tx pgx.Tx, evs []Event, state Aggregate) error {
	if len(evs) == 0 {
		return nil
	}
	streamID := evs[0].StreamID
	if state == nil {
		var err error
		if state, err = foldStream(ctx, tx, streamID); err != nil {
			return err
		}
	}
	des := make([]domain.Event, len(evs))
	for i, ev := range evs {
		de, err := domain.DecodeEvent(ev.Type, ev.Data)
		if err != nil {
			return err
		}
		des[i] = de
	}
	b := &pgx.Batch{}
	routes, err := queueProjection(b, evs, des, state)
	if err != nil {
		return err
	}
	// A caller's own transaction: its COMMIT is not the store's to follow,
	// so the routes are announced inside it (delivered on commit).
	for _, key := range routes {
		queueNotifyRoute(b, key)
	}
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("project %d event(s) of %s: %w", len(evs), streamID, err)
	}
	return nil
}

// queueProjection queues in b the statements that project evs (decoded as
// des) with state, the aggregate folded through them. It needs of evs only
// what is known before they are stored (stream, version, metadata), so
// Tx.Append sends them in the round trip that stores the events. It returns
// the functions ("<ns>/<function>") whose route may have changed, for the
// caller to announce on RoutesChannel once they are committed.
func queueProjection(b *pgx.Batch, evs []Event, des []domain.Event, state Aggregate) (routes []string, _ error) {
	streamID := evs[0].StreamID
	ns, name := splitStream(streamID)
	switch s := state.(type) {
	case *domain.Function:
		if projectFunction(b, evs, des, s, ns, name) {
			routes = append(routes, ns+"/"+name)
		}
	case *domain.Trigger:
		if fn := projectTrigger(b, des, s, ns, name); fn != "" {
			routes = append(routes, ns+"/"+fn)
		}
	case *domain.Job:
		projectJob(b, s, ns, name)
	case *domain.Secret:
		projectSecret(b, s, ns, name)
	case *domain.Namespace:
		for _, de := range des {
			if e, ok := de.(domain.NamespaceEnsured); ok {
				b.Queue(`INSERT INTO namespaces (name, created_at) VALUES ($1, $2) ON CONFLICT DO NOTHING`, e.Namespace, e.At)
			}
		}
	default:
		return nil, domain.Errorf(domain.EINTERNAL, "no projection for stream %q (%T)", streamID, state)
	}
	return routes, nil
}

// projectFunction writes the function's row and the rows of the versions evs
// touch from f, after the history rows of evs (a delete first, activations),
// and reports whether the function's route may have changed.
func projectFunction(b *pgx.Batch, evs []Event, des []domain.Event, f *domain.Function, ns, name string) (route bool) {
	touched := map[int]bool{}
	for i, de := range des {
		switch e := de.(type) {
		case domain.FunctionDeleted:
			b.Queue(`WITH v AS (DELETE FROM function_versions WHERE namespace = $1 AND function = $2),
			              a AS (DELETE FROM activations WHERE namespace = $1 AND function = $2)
			         DELETE FROM functions WHERE namespace = $1 AND name = $2`, ns, name)
			clear(touched)
			route = true
		case domain.VersionCreated:
			touched[e.Version], route = true, true
		case domain.BuildStarted:
			touched[e.Version] = true
		case domain.BuildSucceeded:
			touched[e.Version] = true
		case domain.BuildFailed:
			touched[e.Version], route = true, true
		case domain.VersionActivated:
			b.Queue(`INSERT INTO activations (position, namespace, function, version, from_version, reason, actor, activated_at)
			         SELECT position, $2, $3, $4, $5, $6, $7, $8 FROM events WHERE stream_id = $1 AND stream_version = $9`,
				evs[i].StreamID, ns, name, e.Version, e.From, e.Reason, evs[i].Metadata.Actor, e.At, evs[i].StreamVersion)
			route = true
		case domain.FunctionCreated, domain.FunctionConfigUpdated, domain.RolloutCompleted, domain.RolloutFailed:
			route = true
		}
	}
	if f.Exists {
		c := f.Config
		env, _ := json.Marshal(c.EnvVars)
		var async []byte // NULL: the defaults
		if c.Async != nil {
			async, _ = json.Marshal(c.Async)
		}
		b.Queue(`INSERT INTO functions (namespace, name, runtime, entrypoint, memory_mb, timeout_sec, env_vars, max_concurrency, retry_safe,
		                                phase, message, active_version, serving_version, endpoint, created_at, last_built_at,
		                                last_build_failure_version, last_build_failure_message, rollout_failure, async,
		                                min_instances, max_instances, concurrency, secrets, secret_files, secret_versions, secret_names)
		         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23,
		                 $24, $25, $26, $27)
		         ON CONFLICT (namespace, name) DO UPDATE SET runtime = $3, entrypoint = $4, memory_mb = $5, timeout_sec = $6, env_vars = $7,
		             max_concurrency = $8, retry_safe = $9, phase = $10, message = $11, active_version = $12, serving_version = $13,
		             endpoint = $14, created_at = $15, last_built_at = $16, last_build_failure_version = $17,
		             last_build_failure_message = $18, rollout_failure = $19, async = $20,
		             min_instances = $21, max_instances = $22, concurrency = $23,
		             secrets = $24, secret_files = $25, secret_versions = $26, secret_names = $27`,
			ns, name, string(c.Runtime), c.Entrypoint, c.MemoryMB, c.TimeoutSec, env, c.MaxConcurrency, c.RetrySafe,
			string(f.Phase), f.Message, f.ActiveVersion, f.ServingVersion, f.Endpoint, f.CreatedAt, nullTime(f.LastBuiltAt),
			f.LastBuildFailure.Version, f.LastBuildFailure.Message, f.RolloutFailure, async,
			c.Scale.MinInstances, c.Scale.MaxInstances, c.Scale.Concurrency,
			nullJSON(c.Secrets), nonNil(c.SecretFiles), nullJSON(c.SecretVersions), nonNil(c.SecretNames()))
		for _, v := range f.Versions {
			if !touched[v.Number] {
				continue
			}
			cfg, _ := json.Marshal(v.Config)
			b.Queue(`INSERT INTO function_versions (namespace, function, version, digest, zip_key, context_key, config, build_status,
			                                        image, message, build_log, created_at, built_at)
			         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)
			         ON CONFLICT (namespace, function, version) DO UPDATE SET build_status = $8, image = $9, message = $10,
			             build_log = $11, built_at = $13`,
				ns, name, v.Number, v.Digest, v.ZipKey, v.ContextKey, cfg, string(v.BuildStatus),
				v.Image, v.Message, v.BuildLog, v.CreatedAt, nullTime(v.BuiltAt))
		}
	}
	return route
}

// projectTrigger writes the trigger's row from t (or deletes it), and the time
// it last became active from the event that says so. It returns the function
// whose route may have changed ("" for none); a deleted trigger's function
// is announced inside the transaction, from the row the delete removes.
func projectTrigger(b *pgx.Batch, des []domain.Event, t *domain.Trigger, ns, name string) (routeOf string) {
	route := false
	for _, de := range des {
		switch de.(type) {
		case domain.TriggerDeleted: // the route notice needs the row
			queueNotifyTriggerRoute(b, ns, name)
		case domain.TriggerCreated, domain.TriggerEnabled, domain.TriggerDisabled:
			route = true
		}
	}
	if !t.Exists {
		b.Queue(`WITH f AS (DELETE FROM cron_fired WHERE namespace = $1 AND trigger = $2)
		         DELETE FROM triggers WHERE namespace = $1 AND name = $2`, ns, name)
		return ""
	}
	b.Queue(`INSERT INTO triggers (namespace, name, type, function, schedule, enabled, active, created_at)
	         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
	         ON CONFLICT (namespace, name) DO UPDATE SET type = $3, function = $4, schedule = $5, enabled = $6, active = $7, created_at = $8`,
		ns, name, string(t.Type), t.Function, t.Schedule, t.Enabled, t.Active, t.CreatedAt)
	for _, de := range des {
		if e, ok := de.(domain.TriggerActiveChanged); ok {
			b.Queue(`UPDATE triggers SET active_since = CASE WHEN $3 THEN $4::timestamptz END WHERE namespace = $1 AND name = $2`,
				ns, name, e.Active, e.At)
		}
	}
	// Routes are the invoke proxy's, which serves HTTP: only http
	// triggers make them (routeSelect), so only theirs announce a change.
	if route && t.Type == domain.TriggerHTTP {
		return t.Function
	}
	return ""
}

// projectJob writes the job's row from j, or deletes it.
func projectJob(b *pgx.Batch, j *domain.Job, ns, name string) {
	if !j.Exists {
		b.Queue(`DELETE FROM jobs WHERE namespace = $1 AND name = $2`, ns, name)
		return
	}
	b.Queue(`INSERT INTO jobs (namespace, name, function, event, run_id, phase, version, message, output, started_at, completed_at, created_at)
	         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
	         ON CONFLICT (namespace, name) DO UPDATE SET function = $3, event = $4, run_id = $5, phase = $6, version = $7, message = $8,
	             output = $9, started_at = $10, completed_at = $11, created_at = $12`,
		ns, name, j.Function, []byte(j.Event), j.RunID, string(j.Phase), j.Version, j.Message, j.Output,
		nullTime(j.StartedAt), nullTime(j.CompletedAt), j.CreatedAt)
}

// projectSecret writes the secret's row from s, or deletes it.
func projectSecret(b *pgx.Batch, s *domain.Secret, ns, name string) {
	if !s.Exists {
		b.Queue(`DELETE FROM secrets WHERE namespace = $1 AND name = $2`, ns, name)
		return
	}
	b.Queue(`INSERT INTO secrets (namespace, name, version, created_at, updated_at) VALUES ($1, $2, $3, $4, $5)
	         ON CONFLICT (namespace, name) DO UPDATE SET version = $3, created_at = $4, updated_at = $5`,
		ns, name, s.Version, s.CreatedAt, s.UpdatedAt)
}

// nullJSON is m as JSON, or NULL when it is empty.
func nullJSON[M ~map[K]V, K comparable, V any](m M) []byte {
	if len(m) == 0 {
		return nil
	}
	b, _ := json.Marshal(m)
	return b
}

// nonNil is s, or an empty slice for nil (a text[] NOT NULL column).
func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// nullTime is t, or NULL for the zero time.
func nullTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// NewAggregate returns the empty aggregate of a stream (function, trigger,
// job or namespace), by its kind; EINTERNAL for a stream of no known kind.
func NewAggregate(streamID string) (Aggregate, error) {
	ns, name := splitStream(streamID)
	switch streamID {
	case domain.FunctionStream(ns, name):
		return domain.NewFunction(ns, name), nil
	case domain.TriggerStream(ns, name):
		return domain.NewTrigger(ns, name), nil
	case domain.JobStream(ns, name):
		return domain.NewJob(ns, name), nil
	case domain.NamespaceStream(ns):
		return &domain.Namespace{Name: ns}, nil
	case domain.SecretStream(ns, name):
		return domain.NewSecret(ns, name), nil
	}
	return nil, domain.Errorf(domain.EINTERNAL, "no aggregate for stream %q", streamID)
}

// foldStream folds the whole stream, as the transaction sees it.
func foldStream(ctx context.Context, tx pgx.Tx, streamID string) (Aggregate, error) {
	agg, err := NewAggregate(streamID)
	if err != nil {
		return nil, err
	}
	evs, err := readStream(ctx, tx, streamID, 1)
	if err != nil {
		return nil, err
	}
	return agg, Fold(evs, agg)
}

// splitStream returns the namespace and name of a "<kind>:<namespace>/<name>" stream id.
func splitStream(id string) (ns, name string) {
	_, rest, _ := strings.Cut(id, ":")
	ns, name, _ = strings.Cut(rest, "/")
	return ns, name
}
