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

// UploadResult is what an upload did.
type UploadResult struct {
	// Version is the new version, or the identical one the upload matched.
	Version domain.Version
	// Active is the function's active version number (0: none yet).
	Active int
	// Queued says whether a build was queued: for a new version, or again for
	// the identical newest version whose build job was lost.
	Queued bool
}

// UploadCode validates a zip, stores it in the code store (zip and build
// context) and records it as a new version whose build is queued. Code and
// configuration identical to the active version make no new version; so do
// code and configuration identical to the newest version while it waits for
// its build or failed it (its build is queued again when its job was lost).
//
// Errors: ENOTFOUND (function), EINVALID (a bad zip), ETOOLARGE (a zip
// bomb), ECONFLICT (the runtime changed during the upload).
func (c *Commands) UploadCode(ctx context.Context, meta store.Metadata, in UploadCodeInput) (UploadResult, error) {
	if err := domain.ValidateName("name", in.Name); err != nil {
		return UploadResult{}, err
	}
	runtime := in.Runtime
	if runtime == "" {
		cur, err := c.cfg.Store.GetFunction(ctx, in.Namespace, in.Name)
		if err != nil {
			return UploadResult{}, err
		}
		runtime = cur.Config.Runtime
	}
	files, err := codestore.ValidateZip(in.Zip, codestore.Limits{})
	if err != nil {
		return UploadResult{}, err
	}
	before, after := runtimes.Describe(runtime).ImageSteps(codestore.Lookup(files))
	obj, err := c.cfg.Code.Put(ctx, in.Namespace, in.Name, in.Zip, files, c.cfg.BaseImage(string(runtime)),
		codestore.ImageSteps{BeforeCode: before, AfterCode: after})
	if err != nil {
		return UploadResult{}, err
	}
	code := domain.Code{Digest: obj.Digest, ZipKey: obj.ZipKey, ContextKey: obj.ContextKey}
	now := c.now()
	var number int
	var requeued bool
	f, evs, err := run(ctx, c, meta, newFunction(in.Ref), func(tx *store.Tx, f *domain.Function) error {
		requeued = false
		return changeFunction(ctx, tx, f, func() ([]domain.Event, error) {
			if f.Exists && f.Config.Runtime != runtime {
				return nil, domain.Errorf(domain.ECONFLICT, "the runtime of function %q changed during the upload; upload again", in.Name)
			}
			evs, n, err := f.Upload(code, now)
			if err != nil {
				return nil, err
			}
			number = n
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
	return UploadResult{Version: v, Active: f.ActiveVersion, Queued: len(evs) > 0 || requeued}, nil
}
