package workers

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"syscall"
	"time"

	"github.com/riverqueue/river"

	"github.com/slessio/sless/command"
	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/driver"
	"github.com/slessio/sless/outbox"
	"github.com/slessio/sless/store"
)

// buildWorker builds one version:
//
//	a slot of the namespace (none free: snooze, see slots.go) → load →
//	(no longer needs a build? complete) → BuildStarted → check the stored code →
//	Driver.Build of the checked bytes → BuildSucceeded (+ VersionActivated,
//	+ rollout job) | BuildFailed, completed in the same transaction
//
// A rerun (River delivers at least once; a crash or stop interrupts a build)
// finds BuildStarted already there and builds again; once an outcome is
// recorded, a rerun completes without calling the driver.
type buildWorker struct {
	river.WorkerDefaults[outbox.BuildArgs]
	w *Workers
	// retryIn holds, by job ID, the delay before the next attempt of a
	// build the driver failed (NextRetry).
	retryIn sync.Map
}

// NextRetry retries a build the driver failed (the platform's failure: a
// full disk, the code store away) after buildRetryDelay, seconds, instead of
// River's schedule, which waits minutes by the third attempt while the
// version shows Building; Work notes such a failure in retryIn. Other
// failures (the database's) keep River's schedule.
func (b *buildWorker) NextRetry(job *river.Job[outbox.BuildArgs]) time.Time {
	if d, ok := b.retryIn.LoadAndDelete(job.ID); ok {
		return time.Now().Add(d.(time.Duration))
	}
	return time.Time{}
}

// maxBuildRetryDelay caps buildRetryDelay.
const maxBuildRetryDelay = 10 * time.Second

// buildRetryDelay is the wait after failed attempt n (from 1) of a build
// the driver could not run: 1 s doubling up to maxBuildRetryDelay, so five
// attempts take about a quarter of a minute and space that comes back is
// used within seconds.
func buildRetryDelay(attempt int) time.Duration {
	if attempt < 1 {
		attempt = 1
	}
	if attempt > 5 {
		return maxBuildRetryDelay
	}
	return min(time.Second<<(attempt-1), maxBuildRetryDelay)
}

// buildErrorMessage is the readable text of a driver's build error for the
// version: a full disk says so in words (DiskFullMessage), whatever path
// the error names; otherwise the driver's message (platformMessage).
func buildErrorMessage(err error) string {
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
		return driver.DiskFullMessage
	}
	return platformMessage(err)
}

// Timeout is the configured build timeout: River's default minute is far too short.
func (b *buildWorker) Timeout(*river.Job[outbox.BuildArgs]) time.Duration {
	return b.w.cfg.BuildTimeout
}

// Work builds the version, see buildWorker.
func (b *buildWorker) Work(ctx context.Context, job *river.Job[outbox.BuildArgs]) error {
	w, a := b.w, job.Args
	stream := domain.FunctionStream(a.Namespace, a.Function)
	md := meta(job.Kind, job.ID)

	// A namespace's builds beyond its slots wait without holding a worker.
	slots := w.slots.Load()
	if slots == nil { // stopping
		return river.JobSnooze(slotWait())
	}
	slot, err := slots.take(ctx, a.Namespace)
	if err != nil {
		return err
	}
	if slot == nil {
		w.log.DebugContext(ctx, "build waits for a slot of its namespace", "namespace", a.Namespace, "function", a.Function, "version", a.Version)
		return river.JobSnooze(slotWait())
	}
	defer slot.release()

	ref := command.Ref{Namespace: a.Namespace, Name: a.Function}
	var spec driver.BuildSpec
	done := false
	_, err = w.store.Execute(ctx, md, func(tx *store.Tx) error {
		v, ok, err := w.cmd.StartBuildTx(ctx, tx, ref, a.Version, a.Incarnation)
		if err != nil {
			return err
		}
		if done = !ok; done { // built, failed, or the function was deleted
			return completeTx(ctx, tx.Tx, job)
		}
		spec = driver.BuildSpec{Namespace: a.Namespace, Function: a.Function, Version: a.Version, Digest: v.Digest,
			ZipKey: v.ZipKey, ContextKey: v.ContextKey, Config: v.Config}
		return nil
	})
	if err != nil || done {
		return err
	}

	out := w.followBuild(ctx, a.Namespace, a.Function, a.Version)
	spec.Progress = out
	started := time.Now()
	res, err := w.build(ctx, spec)
	if outcome, ok := buildOutcome(ctx, res, err); ok {
		w.builds.observe(spec.Config.Runtime, outcome, time.Since(started))
	}
	if ierr := interrupted(ctx, fmt.Sprintf("build %s v%d", stream, a.Version)); ierr != nil {
		out.close()
		return ierr
	}
	if err != nil {
		msg := buildErrorMessage(err)
		if !giveUp(job.JobRow, err) {
			// The version says why it waits, and the retry comes soon.
			delay := buildRetryDelay(job.Attempt)
			fmt.Fprintf(out, "%s; retrying in %s (attempt %d of %d)\n", msg, delay, job.Attempt, job.MaxAttempts)
			out.close()
			b.retryIn.Store(job.ID, delay)
			return fmt.Errorf("build %s v%d: %w", stream, a.Version, err)
		}
		// Say so on the version instead of leaving it Building.
		res = driver.BuildResult{Failed: true, Message: fmt.Sprintf("%s (attempt %d): %s", domain.BuildCouldNotRun, job.Attempt, msg)}
	}
	out.close()

	_, err = w.store.Execute(ctx, md, func(tx *store.Tx) error {
		outcome := command.BuildOutcome{Failed: res.Failed, Image: res.Image, Message: res.Message, Log: res.Log}
		if _, err := w.cmd.RecordBuildOutcomeTx(ctx, tx, ref, a.Version, outcome); err != nil {
			return err
		}
		return completeTx(ctx, tx.Tx, job)
	})
	if err == nil {
		out.forget(ctx)
		w.log.InfoContext(ctx, "build finished", "namespace", a.Namespace, "function", a.Function,
			"version", a.Version, "failed", res.Failed)
	}
	return err
}

// build checks the version's stored code (verifiedCode) and has the driver
// build the checked bytes. Code changed in the object store since the upload
// is a failed build with the code store's message: the driver never sees it.
func (w *Workers) build(ctx context.Context, spec driver.BuildSpec) (driver.BuildResult, error) {
	if w.cfg.Code != nil {
		code, err := verifiedCode(ctx, w.cfg.Code, spec)
		if domain.ErrorCode(err) == domain.EUNPROCESSABLE {
			return driver.BuildResult{Failed: true, Message: domain.ErrorMessage(err)}, nil
		}
		if err != nil {
			return driver.BuildResult{}, fmt.Errorf("read the stored code: %w", err)
		}
		spec.Code = code
	}
	return w.cfg.Driver.Build(ctx, spec)
}
