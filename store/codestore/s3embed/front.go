package s3embed

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// front authenticates a request and rewrites its body into plain bytes before
// gofakes3 handles it. gofakes3 v1.2.0 checks no signatures, decodes
// aws-chunked only on single-part PUTs (and then only the signed variant), and
// stores multipart parts with the chunk framing inside; after front, every
// body gofakes3 reads is the object's bytes, checked against what the client
// signed or announced.
func (s *Server) front(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		payload := r.Header.Get("X-Amz-Content-Sha256")
		var sig *signature
		if s.verifier != nil {
			var serr *s3Error
			if sig, payload, serr = s.verifier.verify(r); serr != nil {
				serr.write(w, r)
				return
			}
		}
		// net/http decides after the handler whether the connection can be
		// reused by inspecting r.Body and r.ContentLength; it must find its
		// own values there, or a body left half read (a rejected upload) is
		// parsed as the next request on the connection.
		origBody, origLen := r.Body, r.ContentLength
		defer func() { r.Body, r.ContentLength = origBody, origLen }()
		if serr := decodeBody(r, sig, payload); serr != nil {
			serr.write(w, r)
			return
		}
		for _, h := range []string{"Authorization", "X-Amz-Content-Sha256", "X-Amz-Decoded-Content-Length",
			"X-Amz-Trailer", "X-Amz-Date", "X-Amz-Security-Token"} {
			r.Header.Del(h)
		}
		next.ServeHTTP(w, r)
	})
}

// decodeBody replaces r.Body with a reader of the object's bytes that fails
// (with an S3 error gofakes3 passes on) if they do not match the signature,
// the declared sha256 or an x-amz-checksum-*.
func decodeBody(r *http.Request, sig *signature, payload string) *s3Error {
	v := &verifyingReader{r: r.Body}
	switch {
	case payload == streamingSigned || payload == streamingSignedTrailer || payload == streamingUnsignedTrail:
		n, err := strconv.ParseInt(r.Header.Get("X-Amz-Decoded-Content-Length"), 10, 64)
		if err != nil || n < 0 {
			return errInvalidRequest("aws-chunked upload needs x-amz-decoded-content-length")
		}
		cr := &chunkedReader{
			src:     bufio.NewReaderSize(r.Body, 64<<10),
			signed:  payload != streamingUnsignedTrail,
			trailer: payload != streamingSigned,
			want:    n,
		}
		if sig != nil {
			cr.sig, cr.prev = sig, sig.seed
		}
		for _, name := range strings.Split(r.Header.Get("X-Amz-Trailer"), ",") {
			if c := newChecksum(name); c != nil {
				cr.sum = c
			}
		}
		v.r = cr
		r.ContentLength = n
		r.Header.Set("Content-Length", strconv.FormatInt(n, 10))
		removeAWSChunked(r.Header)
	case strings.HasPrefix(payload, "STREAMING-"):
		return &s3Error{Status: http.StatusNotImplemented, Code: "NotImplemented",
			Message: payload + " is not supported; use AWS4-HMAC-SHA256 signing"}
	case payload == unsignedPayload || payload == "":
	case isHexSHA256(payload):
		v.sha, v.wantSHA = sha256.New(), strings.ToLower(payload)
	default:
		return errInvalidRequest("x-amz-content-sha256 must be a hex sha256, UNSIGNED-PAYLOAD or a STREAMING-* value")
	}
	// Checksum headers describe the body of an upload (a PUT of an object or
	// a part); on other requests they describe something else.
	if r.Method == http.MethodPut && r.Header.Get("X-Amz-Copy-Source") == "" {
		v.sums = headerChecksums(r.Header)
	}
	r.Body = readCloser{v, r.Body}
	return nil
}

// headerChecksums collects x-amz-checksum-<algorithm> headers of a PUT.
func headerChecksums(h http.Header) []checksumWant {
	var out []checksumWant
	for name, vals := range h {
		if !strings.HasPrefix(strings.ToLower(name), "x-amz-checksum-") || len(vals) == 0 {
			continue
		}
		if c := newChecksum(name); c != nil {
			out = append(out, checksumWant{c, vals[0]})
		}
	}
	return out
}

func removeAWSChunked(h http.Header) {
	var keep []string
	for _, v := range h.Values("Content-Encoding") {
		for _, e := range strings.Split(v, ",") {
			if e = strings.TrimSpace(e); e != "" && e != "aws-chunked" {
				keep = append(keep, e)
			}
		}
	}
	h.Del("Content-Encoding")
	if len(keep) > 0 {
		h.Set("Content-Encoding", strings.Join(keep, ","))
	}
}

func isHexSHA256(s string) bool {
	b, err := hex.DecodeString(s)
	return err == nil && len(b) == sha256.Size
}

type readCloser struct {
	io.Reader
	io.Closer
}
