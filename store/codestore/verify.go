package codestore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"path"

	"github.com/slessio/sless/domain"
)

// Stored code is checked on every read that serves it (a build, GET
// .../source): whoever holds the object store's credentials can overwrite an
// object, and the store's answer is not evidence of what was uploaded. What
// the version recorded at upload is: the code digest (over the validated
// files) and the build context's key, named after the context's own sha256.
// A mismatch is EUNPROCESSABLE with a message saying so; the caller never
// gets the changed bytes.

// maxStoredZip bounds how much a read of a stored zip takes in: uploads are
// capped well below (SPEC §2: 32 MiB).
const maxStoredZip = 64 << 20

// maxStoredContext is the most a build context Put wrote for code within
// lim can take: the files' bytes (at most lim.MaxBytes) plus tar headers and
// padding of every entry and gzip framing, with room to spare.
func maxStoredContext(lim Limits) int64 { return lim.MaxBytes + 64<<20 }

// errTooLarge is read's answer for an object over its bound.
var errTooLarge = errors.New("the stored object is larger than any upload")

// contextName is the file name of a build context: named after its own
// bytes (the first 8 bytes of their sha256), so that a reader can check them.
func contextName(buildCtx []byte) string {
	sum := sha256.Sum256(buildCtx)
	return "context-" + hex.EncodeToString(sum[:8]) + ".tar.gz"
}

// checkContext returns nil when data are the bytes the build context key
// contextKey names, and EUNPROCESSABLE otherwise.
func checkContext(contextKey string, data []byte) error {
	if path.Base(contextKey) != contextName(data) {
		return contextChanged(contextKey)
	}
	return nil
}

func contextChanged(contextKey string) error {
	return domain.Errorf(domain.EUNPROCESSABLE, "the stored build context of this version does not match the hash in its name (%s): "+
		"it was changed in the object store after the upload; upload the code again", path.Base(contextKey))
}

// checkZip validates data as an upload is validated and returns its files
// when their digest is digest; otherwise EUNPROCESSABLE (whatever made the
// zip differ, it is not the code the version recorded).
func checkZip(data []byte, digest string, lim Limits) ([]File, error) {
	files, err := ValidateZip(data, lim)
	if err != nil || Digest(files) != digest {
		return nil, codeChanged(digest)
	}
	return files, nil
}

func codeChanged(digest string) error {
	return domain.Errorf(domain.EUNPROCESSABLE, "the stored code of this version does not match the digest recorded at upload (%s): "+
		"it was changed in the object store after the upload; upload the code again", digest)
}

// GetVerified reads the zip stored at zipKey, validates it with the limits
// of an upload and returns it with its files when their digest is digest
// (the version's Digest): the code as it was uploaded, never anything else.
//
// Errors: EUNPROCESSABLE when the stored zip is not that code (larger than
// any upload, no valid zip, or other files: it was changed in the object
// store after the upload); ENOTFOUND for a missing key; EUNAVAILABLE for an
// unreachable store.
func (s *Store) GetVerified(ctx context.Context, zipKey, digest string) ([]byte, []File, error) {
	data, err := s.read(ctx, zipKey, maxStoredZip)
	if errors.Is(err, errTooLarge) {
		return nil, nil, codeChanged(digest)
	}
	if err != nil {
		return nil, nil, err
	}
	files, err := checkZip(data, digest, s.limits)
	if err != nil {
		return nil, nil, err
	}
	return data, files, nil
}

// GetVerifiedContext reads the build context stored at contextKey and
// returns it when its bytes are those the key names (the first 8 bytes of
// their sha256, as Put names it).
//
// Errors: EUNPROCESSABLE when they are not (it was changed in the object
// store after the upload); ENOTFOUND for a missing key; EUNAVAILABLE for an
// unreachable store.
func (s *Store) GetVerifiedContext(ctx context.Context, contextKey string) ([]byte, error) {
	data, err := s.read(ctx, contextKey, maxStoredContext(s.limits))
	if errors.Is(err, errTooLarge) {
		return nil, contextChanged(contextKey)
	}
	if err != nil {
		return nil, err
	}
	if err := checkContext(contextKey, data); err != nil {
		return nil, err
	}
	return data, nil
}

// read returns the object at key whole, or errTooLarge when it holds more
// than max bytes. A missing key is ENOTFOUND, an unreachable store
// EUNAVAILABLE.
func (s *Store) read(ctx context.Context, key string, max int64) ([]byte, error) {
	rc, err := s.Get(ctx, key)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	data, err := io.ReadAll(io.LimitReader(rc, max+1))
	if err != nil {
		return nil, mapErr("read "+key, err)
	}
	if int64(len(data)) > max {
		return nil, errTooLarge
	}
	return data, nil
}
