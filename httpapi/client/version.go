package client

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"mime/multipart"
	"net/http"
	"net/url"
	"strconv"

	"github.com/slessio/sless/httpapi/wire"
)

// Version is one immutable version of a function: code digest,
// configuration snapshot and build outcome; BuildLog is set by GetVersion only.
type Version = wire.Version

// VersionConfig is the configuration a version was made with.
type VersionConfig = wire.Config

// VersionList is the answer of ListVersions: the versions newest first and
// the Activations, every change of the active version, newest first.
type VersionList = wire.VersionList

// Activation is one change of a function's active version.
type Activation = wire.Activation

// UploadResult is the answer of Upload.
type UploadResult struct {
	Version
	// Queued is true when the upload made a new version whose build is
	// queued (202), false when the code and configuration were those of the
	// active version, or of the newest one still waiting for its build (200).
	Queued bool `json:"-"`
}

// SourceFile is one of the user's files; Content is base64 when Binary.
type SourceFile struct {
	Name    string `json:"name"`
	Content string `json:"content"`
	Binary  bool   `json:"binary"`
}

// Bytes returns the file's content, decoding base64 when Binary.
func (f SourceFile) Bytes() ([]byte, error) {
	if !f.Binary {
		return []byte(f.Content), nil
	}
	b, err := base64.StdEncoding.DecodeString(f.Content)
	if err != nil {
		return nil, fmt.Errorf("decode %s: %w", f.Name, err)
	}
	return b, nil
}

// Source is the answer of Source.
type Source struct {
	// Version is the version the files come from.
	Version int
	Files   []SourceFile
}

// RollbackResult is the answer of Rollback.
type RollbackResult struct {
	Function
	// BuildRequeued is true when the version still waited for a build whose
	// job was lost: the build was queued again (202) and nothing rolled back
	// yet; roll back again once it is built.
	BuildRequeued bool `json:"-"`
}

// Upload sends zip (at most 32 MiB) as the function's code. Errors: *Error
// with CodeNotFound for an unknown function, CodeInvalid (Field "code") for a
// bad zip, CodeTooLarge for one too big or a zip bomb.
func (c *Client) Upload(ctx context.Context, name string, zip []byte) (*UploadResult, error) {
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	w, err := mw.CreateFormFile("code", name+".zip")
	if err != nil {
		return nil, fmt.Errorf("build upload: %w", err)
	}
	if _, err := w.Write(zip); err != nil {
		return nil, fmt.Errorf("build upload: %w", err)
	}
	if err := mw.Close(); err != nil {
		return nil, fmt.Errorf("build upload: %w", err)
	}
	var out UploadResult
	res, err := c.do(ctx, call{route: routeUpload, params: []string{name}, body: &body,
		contentType: mw.FormDataContentType(), out: &out.Version})
	if err != nil {
		return nil, err
	}
	out.Queued = res.StatusCode == http.StatusAccepted
	return &out, nil
}

// Source returns the user's files of version n, or with n = 0 of the active
// version (the newest one while none is active). Errors: *Error with
// CodeNotFound for an unknown function or version, or no code yet.
func (c *Client) Source(ctx context.Context, name string, n int) (*Source, error) {
	var q url.Values
	if n != 0 {
		q = url.Values{"version": {strconv.Itoa(n)}}
	}
	var out Source
	res, err := c.do(ctx, call{route: routeSource, params: []string{name}, query: q, out: &out.Files})
	if err != nil {
		return nil, err
	}
	out.Version, _ = strconv.Atoi(res.Header.Get("X-Sless-Version"))
	return &out, nil
}

// ListVersions returns a function's versions and activation history.
// Errors: *Error with CodeNotFound.
func (c *Client) ListVersions(ctx context.Context, name string) (*VersionList, error) {
	return jsonOf[VersionList](ctx, c, routeListVersions, nil, name)
}

// GetVersion returns version n of a function with its build log. Errors:
// *Error with CodeNotFound.
func (c *Client) GetVersion(ctx context.Context, name string, n int) (*Version, error) {
	var out Version
	if _, err := c.doJSON(ctx, routeGetVersion, nil, &out, name, strconv.Itoa(n)); err != nil {
		return nil, err
	}
	return &out, nil
}

// Rollback makes version n, which must have been built successfully, active
// again with its configuration, without a rebuild. Errors: *Error with
// CodeNotFound for an unknown function or version, CodeUnprocessable for a
// version not built successfully, CodeInvalid (Field "version") for n < 1.
func (c *Client) Rollback(ctx context.Context, name string, n int) (*RollbackResult, error) {
	var out RollbackResult
	status, err := c.doJSON(ctx, routeRollback, wire.RollbackRequest{Version: n}, &out.Function, name)
	if err != nil {
		return nil, err
	}
	out.BuildRequeued = status == http.StatusAccepted
	return &out, nil
}
