package workers

import (
	"context"
	"time"

	"github.com/riverqueue/river"

	"github.com/slessio/sless/command"
	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/driver"
	"github.com/slessio/sless/outbox"
	"github.com/slessio/sless/store"
)

// desired is what should run for a function, as its events say now.
type desired struct {
	exists   bool
	version  int // the active version; 0 when none is built yet
	workload driver.Workload
	replicas int
}

func (d desired) same(o desired) bool {
	return d.exists == o.exists && d.version == o.version && d.replicas == o.replicas
}

// desiredOf is the level the rollout converges to: the active version runs
// when any trigger of the function that its workload serves (an http
// trigger, see domain.TriggerTypeInfo.Workload) is enabled, and is scaled to
// zero otherwise.
func desiredOf(f *domain.Function, triggers []domain.Trigger) desired {
	d := desired{exists: f.Exists}
	v, ok := f.Runnable()
	if !ok {
		return d
	}
	d.version = v.Number
	d.workload = driver.Workload{Namespace: f.Namespace, Function: f.Name, Version: v.Number, Image: v.Image, Config: v.Config}
	d.workload.Config.Scale = f.Config.Scale // the function's, not the version's
	for _, t := range triggers {
		if info, _ := t.Type.Info(); t.Exists && info.Workload && t.Function == f.Name && t.Enabled {
			d.replicas = max(1, f.Config.Scale.MinInstances) // the proxy's autoscaler takes it from there
		}
	}
	return d
}

// rolloutWorker converges a function's HTTP workload to its desired state
// (level-triggered, so the order of rollout jobs does not matter):
//
//	read desired → Driver.Deploy → in one transaction: complete the job, re-read
//	desired; unchanged: RolloutCompleted | RolloutFailed, TriggerActiveChanged for
//	its http triggers, a schedule job per cron trigger; changed: roll back, go again.
//
// The loop, and why the job is completed first, is converge's.
type rolloutWorker struct {
	river.WorkerDefaults[outbox.RolloutArgs]
	w *Workers
}

// Timeout leaves the rollout timeout to converge, which records a function
// that could not be started in time as failed.
func (r *rolloutWorker) Timeout(*river.Job[outbox.RolloutArgs]) time.Duration {
	return r.w.cfg.convergeTimeout()
}

// Work converges the function, see rolloutWorker.
func (r *rolloutWorker) Work(ctx context.Context, job *river.Job[outbox.RolloutArgs]) error {
	w, a := r.w, job.Args
	want, err := w.desired(ctx, a.Namespace, a.Function)
	if err != nil {
		return err
	}
	var endpoint string
	var deployErr error
	var f *domain.Function
	var triggers []domain.Trigger
	want, err = converge(ctx, w, job, "roll out "+a.Namespace+"/"+a.Function, want,
		func(actx context.Context, d desired) error {
			endpoint, deployErr = w.deploy(actx, d)
			return deployErr
		},
		func(tx *store.Tx) (desired, error) {
			var err error
			if f, triggers, err = w.loadFunctionTx(ctx, tx, a.Namespace, a.Function); err != nil {
				return desired{}, err
			}
			return desiredOf(f, triggers), nil
		},
		func(tx *store.Tx, d desired, deployErr error) error {
			return w.recordRollout(ctx, tx, f, triggers, d, endpoint, deployErr)
		})
	if err == nil {
		w.log.InfoContext(ctx, "rollout finished", "namespace", a.Namespace, "function", a.Function,
			"version", want.version, "replicas", want.replicas, "endpoint", endpoint, "error", deployErr)
	}
	return err
}

// deploy calls the driver for the desired state; without a built active
// version there is nothing that could run, hence nothing to converge.
func (w *Workers) deploy(ctx context.Context, d desired) (string, error) {
	if d.version == 0 {
		return "", nil
	}
	return w.cfg.Driver.Deploy(ctx, driver.Deployment{Workload: d.workload, Replicas: d.replicas})
}

// recordRollout records the outcome of converging to want
// (command.RecordRolloutTx) on f and triggers, which tx loaded.
func (w *Workers) recordRollout(ctx context.Context, tx *store.Tx, f *domain.Function, triggers []domain.Trigger,
	want desired, endpoint string, deployErr error) error {
	out := command.RolloutOutcome{Version: want.version, Replicas: want.replicas, Endpoint: endpoint}
	if deployErr != nil {
		out.Failed, out.Message = true, platformMessage(deployErr)
	}
	return w.cmd.RecordRolloutTx(ctx, tx, f, triggers, out)
}

// desired reads the desired state of a function outside a transaction.
func (w *Workers) desired(ctx context.Context, ns, name string) (desired, error) {
	f := domain.NewFunction(ns, name)
	if err := w.read(ctx, domain.FunctionStream(ns, name), f); err != nil {
		return desired{}, err
	}
	listed, err := w.store.ListTriggers(ctx, ns, name)
	if err != nil {
		return desired{}, err
	}
	return desiredOf(f, listed), nil
}

// loadFunctionTx loads a function and its triggers in tx, ready for appends.
// Each trigger is loaded from its stream so its appends are checked against
// the version seen.
func (w *Workers) loadFunctionTx(ctx context.Context, tx *store.Tx, ns, name string) (*domain.Function, []domain.Trigger, error) {
	f := domain.NewFunction(ns, name)
	if err := tx.Load(ctx, domain.FunctionStream(ns, name), f); err != nil {
		return nil, nil, err
	}
	names, err := triggerNamesTx(ctx, tx, ns, name)
	if err != nil {
		return nil, nil, err
	}
	triggers := make([]domain.Trigger, 0, len(names))
	for _, n := range names {
		t := domain.NewTrigger(ns, n)
		if err := tx.Load(ctx, domain.TriggerStream(ns, n), t); err != nil {
			return nil, nil, err
		}
		if t.Exists && t.Function == name {
			triggers = append(triggers, *t)
		}
	}
	return f, triggers, nil
}

// triggerNamesTx lists a function's triggers from the read model inside tx:
// on tx's own connection (a second pool connection per rollout could deadlock
// a small pool) and after the job completion took its lock.
func triggerNamesTx(ctx context.Context, tx *store.Tx, ns, function string) ([]string, error) {
	ts, err := tx.ListTriggers(ctx, ns, function)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(ts))
	for i, t := range ts {
		names[i] = t.Name
	}
	return names, nil
}
