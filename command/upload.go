package command

import (
	"context"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/runtimes"
	"github.com/slessio/sless/store"
	"github.com/slessio/sless/store/codestore"
)

// UploadCodeInput is a zip of a function's code.
type UploadCodeInput struct {
	Ref
	Zip []byte
	// Runtime is the function's runtime as the caller read it before taking
	// the zip ("" reads it now): the build context names its base image, so
	// a runtime changed meanwhile is a conflict.
	Runtime domain.Runtime
}

// UploadResult is what an upload did. Version.Number == Active with Queued
// false and Activation nil: nothing changed, the code is the active
// version's.
type UploadResult struct {
	// Version is the new version, or the identical one the upload matched.
	Version domain.Version
	// Active is the function's active version number (0: none yet).
	Active int
	// Queued says whether the upload made a new version (its build queued,
	// or the build of the same code reused), or queued the build of the
	// identical newest version again because its job was lost.
	Queued bool
	// Activation is the activation the upload recorded when its code and
	// configuration were those of another built version, active again
	// without a rebuild (reason domain.ActivationUpload); nil otherwise.
	Activation *store.Activation
}

// UploadCode validates a zip, stores it in the code store (zip and build
// context) and records it as domain.Function.Upload decides: a new version
// whose build is queued (or that reuses a build); nothing for code and
// configuration identical to the active version, or to the newest version
// while it waits for its build (queued again when its job was lost) or after
// it failed (unless its stored code had been changed after the upload: then
// a new version, built afresh); the activation of another built version
// whose code and configuration they are, with its rollout.
//
// The code is stored under the function's incarnation (see
// codestore.IncarnationPrefix), so the cleanup of a function deleted before
// cannot delete it.
//
// Errors: ENOTFOUND (function), EINVALID (a bad zip), ETOOLARGE (a zip
// bomb), ECONFLICT (the runtime changed during the upload, or the function
// was deleted and created again).
func (c *Commands) UploadCode(ctx context.Context, meta store.Metadata, in UploadCodeInput) (UploadResult, error) {
	if err := domain.ValidateName("name", in.Name); err != nil {
		return UploadResult{}, err
	}
	// The code is stored under the function's incarnation (the cleanup of
	// a deleted one deletes its incarnation's code), read from its stream:
	// the read model does not keep it.
	cur := domain.NewFunction(in.Namespace, in.Name)
	evs, err := c.cfg.Store.ReadStream(ctx, domain.FunctionStream(in.Namespace, in.Name), 1)
	if err != nil {
		return UploadResult{}, err
	}
	if err := store.Fold(evs, cur); err != nil {
		return UploadResult{}, err
	}
	if !cur.Exists {
		return UploadResult{}, domain.Errorf(domain.ENOTFOUND, "function %q not found", in.Name)
	}
	incarnation, runtime := cur.Incarnation, in.Runtime
	if runtime == "" {
		runtime = cur.Config.Runtime
	}
	files, err := codestore.ValidateZip(in.Zip, codestore.Limits{})
	if err != nil {
		return UploadResult{}, err
	}
	before, after := runtimes.Describe(runtime).ImageSteps(codestore.Lookup(files))
	obj, err := c.cfg.Code.Put(ctx, in.Namespace, in.Name, incarnation, in.Zip, files, c.cfg.BaseImage(string(runtime)),
		codestore.ImageSteps{BeforeCode: before, AfterCode: after})
	if err != nil {
		return UploadResult{}, err
	}
	code := domain.Code{Digest: obj.Digest, ZipKey: obj.ZipKey, ContextKey: obj.ContextKey}
	now := c.now()
	var number int
	var requeued bool
	var decided []domain.Event
	f, _, err := run(ctx, c, meta, newFunction(in.Ref), func(tx *store.Tx, f *domain.Function) error {
		requeued, decided = false, nil
		return changeFunction(ctx, tx, f, func() ([]domain.Event, error) {
			if f.Exists && f.Incarnation != incarnation { // its code is the deleted one's, which its cleanup deletes
				return nil, domain.Errorf(domain.ECONFLICT, "function %q was deleted and created again during the upload; upload again", in.Name)
			}
			if f.Exists && f.Config.Runtime != runtime {
				return nil, domain.Errorf(domain.ECONFLICT, "the runtime of function %q changed during the upload; upload again", in.Name)
			}
			evs, n, err := f.Upload(code, now)
			if err != nil {
				return nil, err
			}
			number, decided = n, evs
			if len(evs) == 0 {
				requeued, err = requeueLostBuild(ctx, tx, f, n)
			}
			return evs, err
		})
	})
	if err != nil {
		return UploadResult{}, err
	}
	v, _ := f.Version(number)
	res := UploadResult{Version: v, Active: f.ActiveVersion, Queued: requeued}
	for _, ev := range decided {
		switch e := ev.(type) {
		case domain.VersionCreated:
			res.Queued = true
		case domain.VersionActivated:
			if e.Reason == domain.ActivationUpload {
				res.Activation = &store.Activation{Version: e.Version, FromVersion: e.From, Reason: e.Reason, Actor: meta.Actor, ActivatedAt: e.At}
			}
		}
	}
	return res, nil
}
