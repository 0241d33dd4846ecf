package s3embed

import (
	"encoding/xml"
	"net/http"

	"github.com/johannesboyne/gofakes3"
)

// s3Error is an S3 error answered by the front middleware, before gofakes3
// sees the request. Clients (minio-go, the AWS SDKs) read Code.
type s3Error struct {
	XMLName  xml.Name `xml:"Error"`
	Status   int      `xml:"-"`
	Code     string   `xml:"Code"`
	Message  string   `xml:"Message"`
	Resource string   `xml:"Resource,omitempty"`
}

func (e *s3Error) Error() string { return e.Code + ": " + e.Message }

func (e *s3Error) write(w http.ResponseWriter, r *http.Request) {
	e.Resource = r.URL.Path
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(e.Status)
	if r.Method == http.MethodHead {
		return
	}
	_, _ = w.Write([]byte(xml.Header))
	_ = xml.NewEncoder(w).Encode(e)
}

func errAccessDenied(msg string) *s3Error {
	return &s3Error{Status: http.StatusForbidden, Code: "AccessDenied", Message: msg}
}

func errMalformedAuth(msg string) *s3Error {
	return &s3Error{Status: http.StatusBadRequest, Code: "AuthorizationHeaderMalformed", Message: msg}
}

func errSignatureMismatch() *s3Error {
	return &s3Error{Status: http.StatusForbidden, Code: "SignatureDoesNotMatch",
		Message: "the request signature we calculated does not match the signature you provided; check your key and signing method"}
}

func errInvalidRequest(msg string) *s3Error {
	return &s3Error{Status: http.StatusBadRequest, Code: "InvalidRequest", Message: msg}
}

// Errors raised while the body streams through gofakes3 must be gofakes3
// errors, or gofakes3 answers 500 InternalError. gofakes3 has no 403 code to
// offer for a bad chunk signature, so integrity failures are BadDigest (400).
func errBadBody(msg string) error {
	return gofakes3.ErrorMessage(gofakes3.ErrBadDigest, msg)
}

func errIncompleteBody(msg string) error {
	return gofakes3.ErrorMessage(gofakes3.ErrIncompleteBody, msg)
}
