package httpapi

import (
	"errors"
	"io"
	"mime"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/slessio/sless/command"
	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/httpapi/wire"
	"github.com/slessio/sless/store/codestore"
)

// headerVersion names the version a source listing comes from.
const headerVersion = "X-Sless-Version"

// multipartOverhead is what the multipart envelope may add to the zip itself.
const multipartOverhead = 64 << 10

func (s *Server) registerUploadRoutes(g *echo.Group) {
	g.POST("/functions/:name/upload", s.upload)
	g.GET("/functions/:name/source", s.source)
}

// upload serves POST /v1/namespaces/{ns}/functions/{name}/upload, multipart
// field "code" holding a zip: it is validated, stored in S3 (zip and build
// context) and recorded as a new version whose build is queued (202). Code
// and configuration identical to the active version make no new version
// (200 with the active version, "active": true); so do code and
// configuration identical to the newest version while it waits for its
// build or failed it (200 with that version, or 202 when its build job was
// lost and is queued again; 202 with a new version when it failed because
// its stored code had been changed). Identical to another built version,
// the upload makes it active again (200 with it, "active": true and the
// "activation" recorded). A body over the limit is 413 without reading the
// rest; a bad zip is 400, a zip bomb 413, an unknown function 404
// (command.UploadCode; the name and the function are checked before the body
// is read).
func (s *Server) upload(c echo.Context) error {
	name, err := nameParam(c, "function")
	if err != nil {
		return err
	}
	ns, ctx := c.Param("ns"), c.Request().Context()
	if c.Request().ContentLength > s.maxUploadBody() {
		return s.errUploadTooLarge()
	}
	current, err := s.cfg.Store.GetFunction(ctx, ns, name)
	if err != nil {
		return err
	}
	// Each upload may hold its zip and the files it expands to; bound how
	// many do at once.
	select {
	case s.uploads <- struct{}{}:
		defer func() { <-s.uploads }()
	case <-ctx.Done():
		return ctx.Err()
	}
	zip, err := s.readZip(c)
	if err != nil {
		return err
	}
	res, err := s.cmd.UploadCode(ctx, metadata(c), command.UploadCodeInput{Ref: refOf(c), Zip: zip, Runtime: current.Config.Runtime})
	if err != nil {
		return err
	}
	status := http.StatusAccepted
	if !res.Queued {
		status = http.StatusOK
	}
	out := newVersion(res.Version, res.Active, false)
	if res.Activation != nil {
		a := wire.Activation(*res.Activation)
		out.Activation = &a
	}
	return c.JSON(status, out)
}

// readZip returns the "code" part of a multipart body, refusing (ETOOLARGE)
// it as soon as more than the limit has been read.
func (s *Server) readZip(c echo.Context) ([]byte, error) {
	req := c.Request()
	max := s.cfg.MaxUploadBytes
	tooLarge := s.errUploadTooLarge()
	if mt, _, err := mime.ParseMediaType(req.Header.Get(echo.HeaderContentType)); err != nil || mt != echo.MIMEMultipartForm {
		return nil, domain.FieldErrorf("code", "send the zip as multipart/form-data in a field named \"code\"")
	}
	// Given the connection's writer, MaxBytesReader also makes the server
	// close the connection instead of reading the rest of the body.
	req.Body = http.MaxBytesReader(c.Response().Writer, req.Body, s.maxUploadBody())
	mr, err := req.MultipartReader()
	if err != nil {
		return nil, domain.FieldErrorf("code", "the body is not valid multipart/form-data")
	}
	for {
		part, err := mr.NextPart()
		if err == io.EOF {
			return nil, domain.FieldErrorf("code", "is required: send the zip in a multipart field named \"code\"")
		}
		if err != nil {
			return nil, bodyError(err, tooLarge)
		}
		if part.FormName() != "code" {
			continue // NextPart discards what is left of it
		}
		data, err := io.ReadAll(io.LimitReader(part, max+1))
		if err != nil {
			return nil, bodyError(err, tooLarge)
		}
		if int64(len(data)) > max {
			return nil, tooLarge
		}
		return data, nil
	}
}

// maxUploadBody is the largest multipart body an upload may send.
func (s *Server) maxUploadBody() int64 { return s.cfg.MaxUploadBytes + multipartOverhead }

func (s *Server) errUploadTooLarge() error {
	max := s.cfg.MaxUploadBytes
	return domain.Errorf(domain.ETOOLARGE, "the zip is larger than %d MiB; upload at most %d bytes", max>>20, max)
}

// bodyError tells a body over the limit from a broken one.
func bodyError(err, tooLarge error) error {
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return tooLarge
	}
	return domain.FieldErrorf("code", "the multipart body is malformed or incomplete")
}

// source serves GET /v1/namespaces/{ns}/functions/{name}/source[?version=N]:
// the user's files of version N, by default of the active version (or of the
// newest one while none is active yet), without the generated Dockerfile, as
// [{name, content, binary}] (SPEC §2); X-Sless-Version names the version.
// Stored code that no longer matches the version's digest is 422
// (codestore.Store.GetVerified).
func (s *Server) source(c echo.Context) error {
	name, err := nameParam(c, "function")
	if err != nil {
		return err
	}
	ns, ctx := c.Param("ns"), c.Request().Context()
	f, err := s.cfg.Store.GetFunction(ctx, ns, name)
	if err != nil {
		return err
	}
	var v domain.Version
	switch raw := c.QueryParam("version"); {
	case raw != "":
		n, err := intParam("version", raw)
		if err != nil {
			return err
		}
		if v, err = s.cfg.Store.GetVersion(ctx, ns, name, int(n)); err != nil {
			return err
		}
	case f.ActiveVersion > 0:
		if v, err = s.cfg.Store.GetVersion(ctx, ns, name, f.ActiveVersion); err != nil {
			return err
		}
	default:
		vs, err := s.cfg.Store.ListVersions(ctx, ns, name)
		if err != nil {
			return err
		}
		if len(vs) == 0 {
			return domain.Errorf(domain.ENOTFOUND, "function %q has no code yet; upload a zip first", name)
		}
		v = vs[0]
	}
	// Only the code the version recorded: a zip changed in the object store
	// since is refused (422), never shown.
	_, stored, err := s.cfg.Code.GetVerified(ctx, v.ZipKey, v.Digest)
	if err != nil {
		return err
	}
	files := codestore.SourceFiles(stored) // [] for no files, never null
	c.Response().Header().Set(headerVersion, strconv.Itoa(v.Number))
	return c.JSON(http.StatusOK, files)
}
