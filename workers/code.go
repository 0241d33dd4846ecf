package workers

import (
	"bytes"
	"context"
	"io"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/driver"
	"github.com/slessio/sless/store/codestore"
)

// CodeStore is what the build worker reads stored code through
// (codestore.Store implements it): reads that check the stored bytes against
// what the version recorded at upload, because whoever holds the object
// store's credentials can overwrite an object.
type CodeStore interface {
	// GetVerified returns the zip at zipKey and its files when their digest
	// is digest; EUNPROCESSABLE when the stored zip is other code.
	GetVerified(ctx context.Context, zipKey, digest string) ([]byte, []codestore.File, error)
	// GetVerifiedContext returns the build context at contextKey when its
	// bytes are those its key names; EUNPROCESSABLE when they are not.
	GetVerifiedContext(ctx context.Context, contextKey string) ([]byte, error)
}

// verifiedCode fetches a version's zip and build context and checks both
// (CodeStore), and returns a CodeFetcher serving exactly those bytes from
// memory: the driver builds what was checked, with no second read of the
// object store in between. Code changed in the store is EUNPROCESSABLE
// (the version fails with the store's message); other errors are the
// store's (ENOTFOUND, EUNAVAILABLE: retried).
func verifiedCode(ctx context.Context, code CodeStore, b driver.BuildSpec) (driver.CodeFetcher, error) {
	objects := memoryCode{}
	zip, _, err := code.GetVerified(ctx, b.ZipKey, b.Digest)
	if err != nil {
		return nil, err
	}
	objects[b.ZipKey] = zip
	if b.ContextKey != "" {
		buildCtx, err := code.GetVerifiedContext(ctx, b.ContextKey)
		if err != nil {
			return nil, err
		}
		objects[b.ContextKey] = buildCtx
	}
	return objects, nil
}

// memoryCode is a CodeFetcher over verified objects, by key.
type memoryCode map[string][]byte

func (m memoryCode) Get(_ context.Context, key string) (io.ReadCloser, error) {
	data, ok := m[key]
	if !ok {
		return nil, domain.Errorf(domain.ENOTFOUND, "stored code %q is not the code of the version being built", key)
	}
	return io.NopCloser(bytes.NewReader(data)), nil
}

var _ driver.BuildSource = (*Workers)(nil)

// BuildSpec implements BuildSource: the spec of a built version as the build
// worker made it, with its stored code checked (verifiedCode), for a driver
// that must build the version again where it runs it.
// Errors: ENOTFOUND, EUNPROCESSABLE (not built, code changed in the store),
// EUNAVAILABLE.
func (w *Workers) BuildSpec(ctx context.Context, ns, fn string, version int) (driver.BuildSpec, error) {
	f := domain.NewFunction(ns, fn)
	if err := w.read(ctx, domain.FunctionStream(ns, fn), f); err != nil {
		return driver.BuildSpec{}, err
	}
	v, ok := f.Version(version)
	if !f.Exists || !ok {
		return driver.BuildSpec{}, domain.Errorf(domain.ENOTFOUND, "version %d of function %q does not exist", version, fn)
	}
	if v.BuildStatus != domain.BuildStatusSucceeded {
		return driver.BuildSpec{}, domain.Errorf(domain.EUNPROCESSABLE, "version %d of function %q is not built (%s)", version, fn, v.BuildStatus)
	}
	spec := driver.BuildSpec{Namespace: ns, Function: fn, Version: version, Digest: v.Digest,
		ZipKey: v.ZipKey, ContextKey: v.ContextKey, Config: v.Config}
	if w.cfg.Code != nil {
		code, err := verifiedCode(ctx, w.cfg.Code, spec)
		if err != nil {
			return driver.BuildSpec{}, err
		}
		spec.Code = code
	}
	return spec, nil
}
