package command

import (
	"context"

	"github.com/riverqueue/river"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/outbox"
	"github.com/slessio/sless/store"
)

// CreateFunctionInput is a new function: its name and configuration.
type CreateFunctionInput struct {
	Namespace string
	Name      string
	Spec      domain.FunctionSpec
}

// CreateFunction creates a function (Pending until code is uploaded) and
// ensures its namespace, so the operators' tenant list includes every
// namespace that has functions.
//
// Errors: EINVALID (name or configuration), ECONFLICT (the name exists).
func (c *Commands) CreateFunction(ctx context.Context, meta store.Metadata, in CreateFunctionInput) (domain.Function, error) {
	if err := domain.ValidateName("name", in.Name); err != nil { // before its stream is read: PostgreSQL cannot hold every string
		return domain.Function{}, err
	}
	now := c.now()
	f, _, err := run(ctx, c, meta, newFunction(Ref{in.Namespace, in.Name}), func(tx *store.Tx, f *domain.Function) error {
		n, nsStream, fnStream := &domain.Namespace{Name: in.Namespace}, domain.NamespaceStream(in.Namespace), domain.FunctionStream(f.Namespace, f.Name)
		if err := tx.LoadAll(ctx, store.Stream{ID: nsStream, Agg: n}, store.Stream{ID: fnStream, Agg: f}); err != nil {
			return err
		}
		if _, err := decideAppend(ctx, tx, nsStream, n, func() ([]domain.Event, error) { return n.Ensure(now) }, nil); err != nil {
			return err
		}
		spec := in.Spec
		if err := resolveSecrets(ctx, tx, in.Namespace, &spec); err != nil {
			return err
		}
		_, err := decideAppend(ctx, tx, fnStream, f, func() ([]domain.Event, error) { return f.Create(spec, now) }, nil)
		return err
	})
	return f, err
}

// FunctionPatch is a partial configuration: the fields that are not nil
// replace the current ones.
type FunctionPatch struct {
	Runtime        *string
	Entrypoint     *string
	MemoryMB       *int
	TimeoutSec     *int
	EnvVars        *map[string]string
	MaxConcurrency *int
	RetrySafe      *bool
	Async          *AsyncPatch
	MinInstances   *int
	MaxInstances   *int
	Concurrency    *int
	// Secrets and SecretFiles replace the whole map or list when given.
	Secrets     *map[string]string
	SecretFiles *[]string
}

// AsyncPatch is a partial async configuration: the fields that are not nil
// replace the current (or default) ones.
type AsyncPatch struct {
	MaxRetries, MaxEventAgeSec, MaxConcurrency *int
}

// Over returns cur with the fields of p over it.
func (p AsyncPatch) Over(cur domain.AsyncConfig) domain.AsyncConfig {
	set(&cur.MaxRetries, p.MaxRetries)
	set(&cur.MaxEventAgeSec, p.MaxEventAgeSec)
	set(&cur.MaxConcurrency, p.MaxConcurrency)
	return cur
}

// over returns the spec of cur with the fields of p over it. When the
// runtime changes and the entrypoint was the old runtime's default and is not
// given, the new runtime's default follows (handler.handle means nothing in Go).
func (p FunctionPatch) over(cur domain.FunctionConfig) domain.FunctionSpec {
	spec := domain.FunctionSpec{Runtime: string(cur.Runtime), Entrypoint: cur.Entrypoint,
		MemoryMB: cur.MemoryMB, TimeoutSec: cur.TimeoutSec, EnvVars: cur.EnvVars, MaxConcurrency: cur.MaxConcurrency,
		RetrySafe: cur.RetrySafe, Async: cur.Async, Scale: cur.Scale, Secrets: cur.Secrets, SecretFiles: cur.SecretFiles}
	if p.Runtime != nil && *p.Runtime != spec.Runtime {
		if cur.Entrypoint == domain.DefaultEntrypoint(cur.Runtime) {
			spec.Entrypoint = ""
		}
		spec.Runtime = *p.Runtime
	}
	set(&spec.Entrypoint, p.Entrypoint)
	set(&spec.MemoryMB, p.MemoryMB)
	set(&spec.TimeoutSec, p.TimeoutSec)
	set(&spec.EnvVars, p.EnvVars)
	set(&spec.MaxConcurrency, p.MaxConcurrency)
	set(&spec.RetrySafe, p.RetrySafe)
	set(&spec.Scale.MinInstances, p.MinInstances)
	set(&spec.Scale.MaxInstances, p.MaxInstances)
	set(&spec.Scale.Concurrency, p.Concurrency)
	set(&spec.Secrets, p.Secrets)
	set(&spec.SecretFiles, p.SecretFiles)
	if p.Async != nil {
		a := p.Async.Over(cur.AsyncPolicy())
		spec.Async = &a
	}
	return spec
}

// set replaces *dst by *v when v is given.
func set[T any](dst *T, v *T) {
	if v != nil {
		*dst = *v
	}
}

// UpdateFunctionInput changes a function's configuration.
type UpdateFunctionInput struct {
	Ref
	Patch FunctionPatch
}

// UpdateFunction merges the patch over the current configuration. When code
// exists a changed configuration makes a new version of the code that
// serves (of the newest upload while it awaits its build, see
// domain.Function.UpdateConfig), built unless the same code was built for
// the same runtime and entrypoint already, and rolled out.
//
// Errors: ENOTFOUND, EINVALID (the merged configuration).
func (c *Commands) UpdateFunction(ctx context.Context, meta store.Metadata, in UpdateFunctionInput) (domain.Function, error) {
	now := c.now()
	f, _, err := run(ctx, c, meta, newFunction(in.Ref), func(tx *store.Tx, f *domain.Function) error {
		return changeFunction(ctx, tx, f, func() ([]domain.Event, error) {
			spec := in.Patch.over(f.Config)
			if err := resolveSecrets(ctx, tx, in.Namespace, &spec); err != nil {
				return nil, err
			}
			return f.UpdateConfig(spec, now)
		})
	})
	return f, err
}

// DeleteFunction deletes a function with its versions, its triggers and its
// jobs in one transaction (a job's run still going is cancelled, as
// DeleteJob does); a cleanup job removes workloads, schedules and stored
// code. The invocation log keeps the runs.
//
// Errors: ENOTFOUND.
func (c *Commands) DeleteFunction(ctx context.Context, meta store.Metadata, in Ref) error {
	now := c.now()
	_, _, err := run(ctx, c, meta, newFunction(in), func(tx *store.Tx, f *domain.Function) error {
		// Locked as trigger and job creation lock it: a trigger or job
		// created meanwhile is either seen and deleted here, or refused for
		// a missing function.
		if err := tx.Lock(ctx, domain.FunctionStream(f.Namespace, f.Name)); err != nil {
			return err
		}
		if err := changeFunction(ctx, tx, f, func() ([]domain.Event, error) { return f.Delete(now) }); err != nil {
			return err
		}
		triggers, err := tx.ListTriggers(ctx, in.Namespace, in.Name)
		if err != nil {
			return err
		}
		for _, t := range triggers {
			if err := deleteTrigger(ctx, tx, Ref{in.Namespace, t.Name}, now); err != nil && domain.ErrorCode(err) != domain.ENOTFOUND {
				return err
			}
		}
		jobs, err := tx.ListJobs(ctx, in.Namespace, in.Name)
		if err != nil {
			return err
		}
		for _, j := range jobs {
			if err := deleteJob(ctx, tx, Ref{in.Namespace, j.Name}, now); err != nil && domain.ErrorCode(err) != domain.ENOTFOUND {
				return err
			}
		}
		// Its queued work and dead letters go with it.
		return c.cfg.Store.DeleteAsyncOfTx(ctx, tx.Tx, in.Namespace, in.Name)
	})
	return err
}

// RollbackInput names the version to make active again.
type RollbackInput struct {
	Ref
	Version int
}

// Rollback makes version n, which must have been built successfully, active
// again with its configuration and without a rebuild; a rollout is queued.
// A version still waiting for a build whose job was lost has that build
// queued again instead, and requeued is true (roll back once it is built).
//
// Errors: EINVALID (n < 1), ENOTFOUND (function or version),
// EUNPROCESSABLE (a version that is not built).
func (c *Commands) Rollback(ctx context.Context, meta store.Metadata, in RollbackInput) (f domain.Function, requeued bool, err error) {
	if in.Version < 1 {
		return domain.Function{}, false, domain.FieldErrorf("version", "is required and must be 1 or more")
	}
	now := c.now()
	f, _, err = run(ctx, c, meta, newFunction(in.Ref), func(tx *store.Tx, f *domain.Function) error {
		return changeFunction(ctx, tx, f, func() ([]domain.Event, error) {
			var err error
			if requeued, err = requeueLostBuild(ctx, tx, f, in.Version); err != nil || requeued {
				return nil, err
			}
			return f.Rollback(in.Version, now)
		})
	})
	return f, requeued, err
}

// newFunction returns a maker of the empty aggregate of function in.
func newFunction(in Ref) func() *domain.Function {
	return func() *domain.Function { return domain.NewFunction(in.Namespace, in.Name) }
}

// changeFunction is change on f's stream with the jobs its events cause
// (outbox.FunctionJobs needs them folded into f).
func changeFunction(ctx context.Context, tx *store.Tx, f *domain.Function, decide func() ([]domain.Event, error)) error {
	_, err := change(ctx, tx, domain.FunctionStream(f.Namespace, f.Name), f, decide,
		func(evs []domain.Event) []river.InsertManyParams { return outbox.FunctionJobs(f, evs) })
	return err
}

// requeueLostBuild queues the build of version n of f again when the version
// still waits for one (Queued or Building) but no build job will run it: the
// job was discarded, cancelled or deleted, so nothing else ever would. It
// reports whether it queued one; a build under way is left alone.
func requeueLostBuild(ctx context.Context, tx *store.Tx, f *domain.Function, n int) (bool, error) {
	if !f.NeedsBuild(n) {
		return false, nil
	}
	return tx.Requeue(ctx, outbox.BuildArgs{Namespace: f.Namespace, Function: f.Name, Version: n, Incarnation: f.Incarnation})
}

// requireFunction checks that a function another aggregate refers to exists,
// and locks it against a concurrent delete until tx ends. A missing one is
// EUNPROCESSABLE naming the field: the request is well-formed but names
// nothing that exists (404 would suggest a wrong URL).
func requireFunction(ctx context.Context, tx *store.Tx, ns, name string) error {
	if err := tx.Lock(ctx, domain.FunctionStream(ns, name)); err != nil {
		return err
	}
	f := domain.NewFunction(ns, name)
	if err := tx.Load(ctx, domain.FunctionStream(ns, name), f); err != nil {
		return err
	}
	if !f.Exists {
		return &domain.Error{Code: domain.EUNPROCESSABLE, Field: "function",
			Message: "function: " + name + " does not exist in this namespace; create it first"}
	}
	return nil
}
