package command

import (
	"context"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/outbox"
	"github.com/slessio/sless/store"
)

// StartBuildTx records in tx, the caller's transaction, that the build of
// version n of function in started (BuildStarted; nothing when a rerun
// finds it started), and returns the version to build. ok is false when the
// version needs no build any more: it is built or failed, or its function
// was deleted, or deleted and created again (incarnation is the one the
// build was queued for, see outbox.SameIncarnation). The build worker then
// completes its River job in tx without building.
//
// Errors: the store's.
func (c *Commands) StartBuildTx(ctx context.Context, tx *store.Tx, in Ref, n, incarnation int) (v domain.Version, ok bool, err error) {
	f, now := domain.NewFunction(in.Namespace, in.Name), c.now()
	err = changeFunction(ctx, tx, f, func() ([]domain.Event, error) {
		if !f.NeedsBuild(n) || !outbox.SameIncarnation(incarnation, f.Incarnation) {
			return nil, nil
		}
		ok = true
		return f.StartBuild(n, now)
	})
	if err != nil || !ok {
		return domain.Version{}, false, err
	}
	v, _ = f.Version(n)
	return v, true, nil
}

// BuildOutcome is how a version's build ended, as the worker that ran it saw it.
type BuildOutcome struct {
	// Failed says the build failed with Message; otherwise it made Image.
	Failed bool
	// Image is the image built.
	Image string
	// Message is why the build failed; empty, Log is the message.
	Message string
	// Log is the build's output.
	Log string
}

// RecordBuildOutcomeTx records in tx, the caller's transaction, how the
// build of version n of function in ended: BuildSucceeded, with the
// activation of the version when it is the newest and its rollout
// (outbox.FunctionJobs), or BuildFailed. The build worker completes its
// River job in tx, so that the outcome and the completion commit together.
// A function deleted meanwhile, or a version whose outcome is recorded,
// records nothing (at-least-once delivery). It returns the function as tx
// leaves it.
//
// Errors: ENOTFOUND (no version n), the store's.
func (c *Commands) RecordBuildOutcomeTx(ctx context.Context, tx *store.Tx, in Ref, n int, out BuildOutcome) (domain.Function, error) {
	f, now := domain.NewFunction(in.Namespace, in.Name), c.now()
	err := changeFunction(ctx, tx, f, func() ([]domain.Event, error) {
		switch {
		case !f.Exists: // deleted while building: nothing to record
			return nil, nil
		case out.Failed:
			msg := out.Message
			if msg == "" {
				msg = out.Log
			}
			return f.FailBuild(n, msg, out.Log, now)
		}
		return f.SucceedBuild(n, out.Image, out.Log, now)
	})
	return *f, err
}
