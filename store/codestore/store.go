package codestore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"path"
	"strconv"
	"strings"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/slessio/sless/domain"
)

// Config locates the object store.
type Config struct {
	// Endpoint is host:port, or a URL whose scheme (http or https) sets UseSSL.
	Endpoint  string
	AccessKey string
	SecretKey string
	Bucket    string
	// Region may be empty: the client then asks the server once per bucket.
	Region string
	UseSSL bool
	// Limits apply when a stored zip is read back and checked (GetVerified,
	// Source; zero: DefaultLimits, the limits of an upload).
	Limits Limits
}

// Store keeps function code in an S3-compatible object store through minio-go:
// the uploaded zip and the build context, under content-addressed keys.
type Store struct {
	client *minio.Client
	probe  *minio.Client // no retries: readiness must answer fast
	bucket string
	limits Limits
}

// Object names what Put stored.
type Object struct {
	// Digest is the code digest ("sha256:<hex>", see Digest).
	Digest string
	// ZipKey is the original zip:
	// code/<ns>/<fn>/i<incarnation>/<digest hex>/source.zip.
	ZipKey string
	// ContextKey is the build context tar.gz next to it, named after its own
	// sha256 (context-<16 hex>.tar.gz) because it also depends on the base image.
	ContextKey string
}

// New connects to the object store and creates the bucket if it is missing.
// An unreachable store or rejected credentials are EUNAVAILABLE; a bad
// endpoint is EINVALID.
func New(ctx context.Context, cfg Config) (*Store, error) {
	endpoint, secure, err := parseEndpoint(cfg.Endpoint, cfg.UseSSL)
	if err != nil {
		return nil, err
	}
	if cfg.Bucket == "" {
		return nil, domain.Errorf(domain.EINVALID, "object storage bucket is not configured")
	}
	opts := func(retries int) *minio.Options {
		return &minio.Options{
			Creds:      credentials.NewStaticV4(cfg.AccessKey, cfg.SecretKey, ""),
			Secure:     secure,
			Region:     cfg.Region,
			MaxRetries: retries,
		}
	}
	client, err := minio.New(endpoint, opts(0))
	if err != nil {
		return nil, domain.Errorf(domain.EINVALID, "object storage endpoint %q: %v", cfg.Endpoint, err)
	}
	probe, err := minio.New(endpoint, opts(1))
	if err != nil {
		return nil, domain.Errorf(domain.EINVALID, "object storage endpoint %q: %v", cfg.Endpoint, err)
	}
	s := &Store{client: client, probe: probe, bucket: cfg.Bucket, limits: cfg.Limits.orDefaults()}
	if err := s.ensureBucket(ctx, cfg.Region); err != nil {
		return nil, err
	}
	return s, nil
}

func parseEndpoint(raw string, useSSL bool) (hostport string, secure bool, err error) {
	if raw == "" {
		return "", false, domain.Errorf(domain.EINVALID, "object storage endpoint is not configured")
	}
	if !strings.Contains(raw, "://") {
		return raw, useSSL, nil
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || strings.Trim(u.Path, "/") != "" {
		return "", false, domain.Errorf(domain.EINVALID, "object storage endpoint %q must be host:port or http(s)://host:port", raw)
	}
	return u.Host, u.Scheme == "https", nil
}

// ensureBucket creates the bucket unless it exists; another replica creating
// it at the same time is fine.
func (s *Store) ensureBucket(ctx context.Context, region string) error {
	ok, err := s.client.BucketExists(ctx, s.bucket)
	if err != nil {
		return mapErr("check bucket", err)
	}
	if ok {
		return nil
	}
	err = s.client.MakeBucket(ctx, s.bucket, minio.MakeBucketOptions{Region: region})
	if code := minio.ToErrorResponse(err).Code; code == "BucketAlreadyOwnedByYou" || code == "BucketAlreadyExists" {
		return nil
	}
	return mapErr("create bucket", err)
}

// FunctionPrefix is the key prefix of everything stored for one function
// name, all its incarnations together.
func FunctionPrefix(ns, fn string) string { return "code/" + ns + "/" + fn + "/" }

// IncarnationPrefix is the key prefix of everything stored for one
// incarnation of a function (domain.Function.Incarnation: a function deleted
// and created again under its name is a new one). Each incarnation's code
// lives apart, so deleting one incarnation's code (DeleteCode) never touches
// the code a later one uploaded meanwhile.
func IncarnationPrefix(ns, fn string, incarnation int) string {
	return FunctionPrefix(ns, fn) + "i" + strconv.Itoa(incarnation) + "/"
}

// Put stores the original zip and the build context of files (see
// BuildContext, with the runtime's steps) under keys made of namespace,
// function, its incarnation and content digests (see IncarnationPrefix).
// Storing the same code again uploads nothing while the stored objects are
// intact, and replaces one that was changed in the object store since (see
// verify.go), so that uploading the code again repairs it. It returns the
// same Object either way. files must be what ValidateZip returned for zip.
// A bad namespace or function name, incarnation (below 1) or base image is
// EINVALID; object store failures are EUNAVAILABLE.
func (s *Store) Put(ctx context.Context, ns, fn string, incarnation int, zip []byte, files []File, baseImage string, steps ...ImageSteps) (Object, error) {
	if err := domain.ValidateNamespace(ns); err != nil {
		return Object{}, err
	}
	if err := domain.ValidateName("function", fn); err != nil {
		return Object{}, err
	}
	if incarnation < 1 {
		return Object{}, domain.Errorf(domain.EINVALID, "function %q: incarnation %d is not a created function's (1 or more)", fn, incarnation)
	}
	buildCtx, err := BuildContext(files, baseImage, steps...)
	if err != nil {
		return Object{}, err
	}
	digest := Digest(files)
	dir := IncarnationPrefix(ns, fn, incarnation) + digestHex(digest) + "/"
	obj := Object{
		Digest:     digest,
		ZipKey:     dir + zipName,
		ContextKey: dir + contextName(buildCtx),
	}
	// The context last: a builder given ContextKey finds the zip stored too.
	err = s.putUnlessIntact(ctx, obj.ZipKey, zip, "application/zip", maxStoredZip, func(stored []byte) bool {
		_, err := checkZip(stored, digest, s.limits)
		return err == nil
	})
	if err != nil {
		return Object{}, err
	}
	err = s.putUnlessIntact(ctx, obj.ContextKey, buildCtx, "application/gzip", maxStoredContext(s.limits), func(stored []byte) bool {
		return checkContext(obj.ContextKey, stored) == nil
	})
	if err != nil {
		return Object{}, err
	}
	return obj, nil
}

// zipName is the file name of the original zip, in the directory named
// after its code digest.
const zipName = "source.zip"

// zipKeyDigest returns the code digest a zip key Put made names.
func zipKeyDigest(zipKey string) string { return "sha256:" + path.Base(path.Dir(zipKey)) }

// putUnlessIntact uploads data unless key holds an intact copy (intact says
// so). Keys are content-addressed, so an intact object holds equivalent
// bytes; one changed in the object store after its upload is replaced.
func (s *Store) putUnlessIntact(ctx context.Context, key string, data []byte, contentType string, max int64, intact func(stored []byte) bool) error {
	stored, err := s.read(ctx, key, max)
	switch {
	case err == nil && intact(stored):
		return nil
	case err == nil, errors.Is(err, errTooLarge), domain.ErrorCode(err) == domain.ENOTFOUND:
	default:
		return err
	}
	_, err = s.client.PutObject(ctx, s.bucket, key, bytes.NewReader(data), int64(len(data)),
		minio.PutObjectOptions{ContentType: contentType})
	return mapErr("put "+key, err)
}

// Get opens a stored object; the caller closes it. A missing key is
// ENOTFOUND, an unreachable store EUNAVAILABLE.
func (s *Store) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	obj, err := s.client.GetObject(ctx, s.bucket, key, minio.GetObjectOptions{})
	if err != nil {
		return nil, mapErr("get "+key, err)
	}
	// GetObject is lazy; Stat makes a missing key fail here, not on first Read.
	if _, err := obj.Stat(); err != nil {
		obj.Close()
		return nil, mapErr("get "+key, err)
	}
	return obj, nil
}

// Delete removes every object whose key starts with prefix, e.g.
// IncarnationPrefix(ns, fn, n) when incarnation n of a function is deleted.
// The prefix must end in "/" so that deleting function "a" never touches
// "ab" (EINVALID otherwise); store failures are EUNAVAILABLE.
func (s *Store) Delete(ctx context.Context, prefix string) error {
	if prefix == "" || !strings.HasSuffix(prefix, "/") {
		return domain.Errorf(domain.EINVALID, "delete prefix %q must be non-empty and end in /", prefix)
	}
	return s.deleteWhere(ctx, prefix, func(string) bool { return true })
}

// DeleteCode removes the stored code of incarnation incarnation of function
// fn: everything under IncarnationPrefix. Incarnation 0 is a cleanup queued
// by a server that did not name incarnations: it removes only the legacy
// code, stored before keys named them, directly under FunctionPrefix in
// directories named after a code digest (64 hex digits); never an
// "i<n>/" directory, which a later incarnation may have uploaded to since.
// Store failures are EUNAVAILABLE; a negative incarnation is EINVALID.
func (s *Store) DeleteCode(ctx context.Context, ns, fn string, incarnation int) error {
	switch {
	case incarnation > 0:
		return s.Delete(ctx, IncarnationPrefix(ns, fn, incarnation))
	case incarnation < 0:
		return domain.Errorf(domain.EINVALID, "function %q: no incarnation %d", fn, incarnation)
	}
	prefix := FunctionPrefix(ns, fn)
	return s.deleteWhere(ctx, prefix, func(key string) bool {
		dir, _, nested := strings.Cut(strings.TrimPrefix(key, prefix), "/")
		return nested && isDigestHex(dir)
	})
}

// deleteWhere removes the objects under prefix whose keys match says.
func (s *Store) deleteWhere(ctx context.Context, prefix string, match func(key string) bool) error {
	keys := make(chan minio.ObjectInfo)
	listErr := make(chan error, 1)
	go func() {
		defer close(keys)
		for o := range s.client.ListObjects(ctx, s.bucket, minio.ListObjectsOptions{Prefix: prefix, Recursive: true}) {
			if o.Err != nil {
				listErr <- o.Err
				return
			}
			if !match(o.Key) {
				continue
			}
			select {
			case keys <- o:
			case <-ctx.Done():
				return
			}
		}
	}()
	var firstErr error
	for e := range s.client.RemoveObjects(ctx, s.bucket, keys, minio.RemoveObjectsOptions{}) {
		if firstErr == nil {
			firstErr = mapErr("delete "+e.ObjectName, e.Err)
		}
	}
	select {
	case err := <-listErr:
		return mapErr("list "+prefix, err)
	default:
	}
	if firstErr != nil {
		return firstErr
	}
	return ctx.Err()
}

// Ping checks that the object store answers and the bucket exists, for
// readiness; failures are EUNAVAILABLE.
func (s *Store) Ping(ctx context.Context) error {
	ok, err := s.probe.BucketExists(ctx, s.bucket)
	if err != nil {
		err = mapErr("ping", err)
		if domain.ErrorCode(err) == domain.EINTERNAL {
			return fmt.Errorf("%w: %w", domain.Errorf(domain.EUNAVAILABLE, "object storage is unavailable"), err)
		}
		return err
	}
	if !ok {
		return domain.Errorf(domain.EUNAVAILABLE, "object storage bucket %q does not exist", s.bucket)
	}
	return nil
}
