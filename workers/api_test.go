package workers_test

import (
	"context"
	"encoding/json"
	"time"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/outbox"
	"github.com/slessio/sless/store"
)

// These helpers append what the API appends for a request, with the jobs
// the outbox selectors pick, so the workers see what production gives them.

var apiMeta = store.Metadata{Actor: "test-user"}

func (h *harness) now() time.Time { return h.clock.Now().UTC() }

func (h *harness) createFunction(name string, spec domain.FunctionSpec) {
	h.t.Helper()
	h.functionCmd(name, func(f *domain.Function) ([]domain.Event, error) { return f.Create(spec, h.now()) })
}

// upload creates a version of code with the given digest; the keys point at
// the code store as codestore.Put names them.
func (h *harness) upload(name, digest string) {
	h.t.Helper()
	h.uploadCode(name, domain.Code{Digest: digest, ZipKey: "code/" + h.ns + "/" + name + "/" + digest + "/source.zip",
		ContextKey: "code/" + h.ns + "/" + name + "/" + digest + "/context.tar.gz"})
}

func (h *harness) uploadCode(name string, code domain.Code) {
	h.t.Helper()
	h.functionCmd(name, func(f *domain.Function) ([]domain.Event, error) {
		evs, _, err := f.Upload(code, h.now())
		return evs, err
	})
}

func (h *harness) deleteFunction(name string) {
	h.t.Helper()
	h.functionCmd(name, func(f *domain.Function) ([]domain.Event, error) { return f.Delete(h.now()) })
}

func (h *harness) functionCmd(name string, cmd func(*domain.Function) ([]domain.Event, error)) {
	h.t.Helper()
	ctx := context.Background()
	stream := domain.FunctionStream(h.ns, name)
	_, err := h.api.Execute(ctx, apiMeta, func(tx *store.Tx) error {
		f := domain.NewFunction(h.ns, name)
		if err := tx.Load(ctx, stream, f); err != nil {
			return err
		}
		evs, err := cmd(f)
		if err != nil {
			return err
		}
		if err := tx.Append(ctx, stream, f, evs); err != nil {
			return err
		}
		return tx.Append(ctx, stream, f, nil, outbox.FunctionJobs(f, evs)...)
	})
	if err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) createTrigger(name string, typ domain.TriggerType, function, schedule string, enabled bool) {
	h.t.Helper()
	spec := domain.TriggerSpec{Type: string(typ), Function: function, Schedule: schedule, Enabled: enabled}
	h.triggerCmd(name, nil, func(t *domain.Trigger) ([]domain.Event, error) { return t.Create(spec, h.now()) })
}

func (h *harness) setTriggerEnabled(name string, enabled bool) {
	h.t.Helper()
	h.triggerCmd(name, nil, func(t *domain.Trigger) ([]domain.Event, error) { return t.SetEnabled(enabled, h.now()) })
}

func (h *harness) deleteTrigger(name string) {
	h.t.Helper()
	h.triggerCmd(name, nil, func(t *domain.Trigger) ([]domain.Event, error) { return t.Delete(h.now()) })
}

// triggerCmd runs a trigger command; before, when set, runs inside the
// transaction after the append and its jobs, before the commit.
func (h *harness) triggerCmd(name string, before func(), cmd func(*domain.Trigger) ([]domain.Event, error)) {
	h.t.Helper()
	ctx := context.Background()
	stream := domain.TriggerStream(h.ns, name)
	_, err := h.api.Execute(ctx, apiMeta, func(tx *store.Tx) error {
		t := domain.NewTrigger(h.ns, name)
		if err := tx.Load(ctx, stream, t); err != nil {
			return err
		}
		evs, err := cmd(t)
		if err != nil {
			return err
		}
		prior := *t // TriggerJobs needs the type and function a delete folds away
		if err := tx.Append(ctx, stream, t, evs); err != nil {
			return err
		}
		if t.Exists {
			prior = *t
		}
		if err := tx.Append(ctx, stream, t, nil, outbox.TriggerJobs(prior, evs)...); err != nil {
			return err
		}
		if before != nil {
			before()
		}
		return nil
	})
	if err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) createJob(name, function string, event any, runID int64) {
	h.t.Helper()
	raw, err := json.Marshal(event)
	if err != nil {
		h.t.Fatal(err)
	}
	spec := domain.JobSpec{Function: function, Event: raw, RunID: runID}
	h.jobCmd(name, func(j *domain.Job) ([]domain.Event, error) { return j.Create(spec, h.now()) })
}

func (h *harness) setRunID(name string, runID int64) {
	h.t.Helper()
	h.jobCmd(name, func(j *domain.Job) ([]domain.Event, error) { return j.SetRunID(runID, h.now()) })
}

func (h *harness) jobCmd(name string, cmd func(*domain.Job) ([]domain.Event, error)) {
	h.t.Helper()
	ctx := context.Background()
	stream := domain.JobStream(h.ns, name)
	_, err := h.api.Execute(ctx, apiMeta, func(tx *store.Tx) error {
		j := domain.NewJob(h.ns, name)
		if err := tx.Load(ctx, stream, j); err != nil {
			return err
		}
		evs, err := cmd(j)
		if err != nil {
			return err
		}
		return tx.Append(ctx, stream, j, evs, outbox.RunJobs(j, evs)...)
	})
	if err != nil {
		h.t.Fatal(err)
	}
}

// Read-model accessors that fail the test on errors.

func (h *harness) function(name string) domain.Function {
	h.t.Helper()
	f, err := h.api.GetFunction(context.Background(), h.ns, name)
	if err != nil && domain.ErrorCode(err) != domain.ENOTFOUND {
		h.t.Fatal(err)
	}
	return f
}

func (h *harness) version(function string, n int) domain.Version {
	h.t.Helper()
	v, err := h.api.GetVersion(context.Background(), h.ns, function, n)
	if err != nil && domain.ErrorCode(err) != domain.ENOTFOUND {
		h.t.Fatal(err)
	}
	return v
}

func (h *harness) trigger(name string) domain.Trigger {
	h.t.Helper()
	t, err := h.api.GetTrigger(context.Background(), h.ns, name)
	if err != nil && domain.ErrorCode(err) != domain.ENOTFOUND {
		h.t.Fatal(err)
	}
	return t
}

func (h *harness) job(name string) domain.Job {
	h.t.Helper()
	j, err := h.api.GetJob(context.Background(), h.ns, name)
	if err != nil {
		h.t.Fatal(err)
	}
	return j
}

// readyFunction creates a function and waits until version 1 is built and active.
func (h *harness) readyFunction(name string, spec domain.FunctionSpec) {
	h.t.Helper()
	h.createFunction(name, spec)
	h.upload(name, "d1-"+name)
	h.eventually(10*time.Second, func() error {
		if f := h.function(name); f.ActiveVersion != 1 || f.Phase != domain.PhaseReady {
			return errorf("function %s: active version %d, phase %s; want 1, Ready", name, f.ActiveVersion, f.Phase)
		}
		return nil
	})
}

var pySpec = domain.FunctionSpec{Runtime: "python3.11", TimeoutSec: 2}
