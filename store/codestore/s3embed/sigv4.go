package s3embed

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/textproto"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Payload markers a client puts in x-amz-content-sha256 instead of a body hash.
const (
	unsignedPayload        = "UNSIGNED-PAYLOAD"
	streamingSigned        = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD"
	streamingSignedTrailer = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER"
	streamingUnsignedTrail = "STREAMING-UNSIGNED-PAYLOAD-TRAILER"
)

const (
	sigAlgorithm = "AWS4-HMAC-SHA256"
	amzDateFmt   = "20060102T150405Z"
	// maxSkew is how far a request's signing time may be from ours (as on AWS).
	maxSkew = 15 * time.Minute
	// maxPresignExpiry is the longest validity AWS accepts for a presigned URL.
	maxPresignExpiry = 7 * 24 * time.Hour
)

// signature is what a verified request carries forward: streamed chunks are
// signed with the same key and scope, chained from the seed signature.
type signature struct {
	key     []byte // derived signing key; nil when the server checks no signatures
	amzDate string
	scope   string
	seed    string
}

// chunkSignature returns the signature of one aws-chunked payload chunk whose
// sha256 is dataHash, chained to the previous chunk's signature.
func (s *signature) chunkSignature(prev string, dataHash []byte) string {
	return s.sign("AWS4-HMAC-SHA256-PAYLOAD\n" + s.amzDate + "\n" + s.scope + "\n" + prev + "\n" +
		emptySHA256 + "\n" + hex.EncodeToString(dataHash))
}

// trailerSignature returns the signature over the canonical trailing headers.
func (s *signature) trailerSignature(prev string, trailerHash []byte) string {
	return s.sign("AWS4-HMAC-SHA256-TRAILER\n" + s.amzDate + "\n" + s.scope + "\n" + prev + "\n" +
		hex.EncodeToString(trailerHash))
}

func (s *signature) sign(stringToSign string) string {
	return hex.EncodeToString(hmacSHA256(s.key, stringToSign))
}

var emptySHA256 = hex.EncodeToString(sha256.New().Sum(nil))

// verifier checks AWS Signature Version 4 on requests, in the Authorization
// header or in a presigned URL's query, against one access key.
type verifier struct {
	accessKey string
	secretKey string
	now       func() time.Time
}

// verify authenticates r and returns the signing context plus the payload hash
// the client declared (a hex sha256, UNSIGNED-PAYLOAD or a STREAMING marker).
func (v *verifier) verify(r *http.Request) (*signature, string, *s3Error) {
	q := r.URL.Query()
	auth := r.Header.Get("Authorization")
	switch {
	case strings.HasPrefix(auth, sigAlgorithm+" "):
		return v.verifyHeader(r, strings.TrimPrefix(auth, sigAlgorithm+" "))
	case auth != "":
		return nil, "", errAccessDenied("only AWS Signature Version 4 (AWS4-HMAC-SHA256) is supported")
	case q.Get("X-Amz-Algorithm") != "":
		return v.verifyPresigned(r, q)
	default:
		return nil, "", errAccessDenied("anonymous access is not allowed; sign the request")
	}
}

func (v *verifier) verifyHeader(r *http.Request, params string) (*signature, string, *s3Error) {
	var cred, signed, sig string
	for _, part := range strings.Split(params, ",") {
		k, val, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch k {
		case "Credential":
			cred = val
		case "SignedHeaders":
			signed = val
		case "Signature":
			sig = val
		}
	}
	if cred == "" || signed == "" || sig == "" {
		return nil, "", errMalformedAuth("Authorization needs Credential, SignedHeaders and Signature")
	}
	amzDate := r.Header.Get("X-Amz-Date")
	if amzDate == "" {
		return nil, "", errMalformedAuth("X-Amz-Date header is required")
	}
	payload := r.Header.Get("X-Amz-Content-Sha256")
	if payload == "" {
		return nil, "", errMalformedAuth("x-amz-content-sha256 header is required")
	}
	for _, must := range []string{"host", "x-amz-date", "x-amz-content-sha256"} {
		if !containsHeader(signed, must) {
			return nil, "", errMalformedAuth("SignedHeaders must include " + must)
		}
	}
	t, serr := v.checkTime(amzDate, 0)
	if serr != nil {
		return nil, "", serr
	}
	s, serr := v.signingContext(cred, t, amzDate)
	if serr != nil {
		return nil, "", serr
	}
	cr := canonicalRequest(r, r.URL.Query(), signed, payload)
	want := s.sign(stringToSign(amzDate, s.scope, cr))
	if !hmac.Equal([]byte(want), []byte(sig)) {
		return nil, "", errSignatureMismatch()
	}
	s.seed = sig
	return s, payload, nil
}

func (v *verifier) verifyPresigned(r *http.Request, q url.Values) (*signature, string, *s3Error) {
	if q.Get("X-Amz-Algorithm") != sigAlgorithm {
		return nil, "", errAccessDenied("only AWS4-HMAC-SHA256 presigned URLs are supported")
	}
	cred, amzDate, signed, sig := q.Get("X-Amz-Credential"), q.Get("X-Amz-Date"), q.Get("X-Amz-SignedHeaders"), q.Get("X-Amz-Signature")
	expires, err := strconv.Atoi(q.Get("X-Amz-Expires"))
	if cred == "" || amzDate == "" || signed == "" || sig == "" || err != nil ||
		expires <= 0 || time.Duration(expires)*time.Second > maxPresignExpiry {
		return nil, "", errMalformedAuth("presigned URL is missing or has invalid X-Amz-* parameters")
	}
	if !containsHeader(signed, "host") {
		return nil, "", errMalformedAuth("X-Amz-SignedHeaders must include host")
	}
	t, serr := v.checkTime(amzDate, time.Duration(expires)*time.Second)
	if serr != nil {
		return nil, "", serr
	}
	s, serr := v.signingContext(cred, t, amzDate)
	if serr != nil {
		return nil, "", serr
	}
	payload := q.Get("X-Amz-Content-Sha256")
	if payload == "" {
		payload = unsignedPayload
	}
	unsigned := url.Values{}
	for k, vals := range q {
		if k != "X-Amz-Signature" {
			unsigned[k] = vals
		}
	}
	cr := canonicalRequest(r, unsigned, signed, payload)
	want := s.sign(stringToSign(amzDate, s.scope, cr))
	if !hmac.Equal([]byte(want), []byte(sig)) {
		return nil, "", errSignatureMismatch()
	}
	s.seed = sig
	return s, payload, nil
}

// checkTime parses the signing time; validity is the presigned URL's lifetime
// (0 for header-signed requests, which only get the clock-skew window).
func (v *verifier) checkTime(amzDate string, validity time.Duration) (time.Time, *s3Error) {
	t, err := time.Parse(amzDateFmt, amzDate)
	if err != nil {
		return t, errMalformedAuth("X-Amz-Date is not in the form 20060102T150405Z")
	}
	now := v.now()
	skewed := &s3Error{Status: http.StatusForbidden, Code: "RequestTimeTooSkewed",
		Message: "the difference between the request time and the server's time is too large"}
	if now.Before(t.Add(-maxSkew)) {
		return t, skewed
	}
	if validity > 0 && now.After(t.Add(validity)) {
		return t, errAccessDenied("request has expired")
	}
	if validity == 0 && now.After(t.Add(maxSkew)) {
		return t, skewed
	}
	return t, nil
}

// signingContext checks the credential scope "<key>/<date>/<region>/s3/aws4_request"
// and derives the signing key. Any region is accepted: the server has one.
func (v *verifier) signingContext(cred string, t time.Time, amzDate string) (*signature, *s3Error) {
	parts := strings.Split(cred, "/")
	if len(parts) < 5 {
		return nil, errMalformedAuth("credential must be <access key>/<date>/<region>/s3/aws4_request")
	}
	n := len(parts)
	key, date, region, service, term := strings.Join(parts[:n-4], "/"), parts[n-4], parts[n-3], parts[n-2], parts[n-1]
	if key != v.accessKey {
		return nil, &s3Error{Status: http.StatusForbidden, Code: "InvalidAccessKeyId",
			Message: "the access key id you provided does not exist in our records"}
	}
	if date != t.Format("20060102") || service != "s3" || term != "aws4_request" {
		return nil, errMalformedAuth("credential scope does not match the request date or service s3")
	}
	k := hmacSHA256([]byte("AWS4"+v.secretKey), date)
	k = hmacSHA256(k, region)
	k = hmacSHA256(k, service)
	k = hmacSHA256(k, term)
	return &signature{key: k, amzDate: amzDate, scope: strings.Join(parts[n-4:], "/")}, nil
}

func stringToSign(amzDate, scope, canonical string) string {
	h := sha256.Sum256([]byte(canonical))
	return sigAlgorithm + "\n" + amzDate + "\n" + scope + "\n" + hex.EncodeToString(h[:])
}

// canonicalRequest builds the SigV4 canonical request from what the server
// received: the path and query re-encoded with the AWS rules, and the listed
// headers with trimmed values.
func canonicalRequest(r *http.Request, q url.Values, signedHeaders, payload string) string {
	var b strings.Builder
	b.WriteString(r.Method)
	b.WriteByte('\n')
	path := r.URL.Path
	if path == "" {
		path = "/"
	}
	b.WriteString(awsEscape(path, false))
	b.WriteByte('\n')
	b.WriteString(canonicalQuery(q))
	b.WriteByte('\n')
	for _, name := range strings.Split(signedHeaders, ";") {
		b.WriteString(name)
		b.WriteByte(':')
		b.WriteString(headerValue(r, name))
		b.WriteByte('\n')
	}
	b.WriteByte('\n')
	b.WriteString(signedHeaders)
	b.WriteByte('\n')
	b.WriteString(payload)
	return b.String()
}

// headerValue returns a signed header's canonical value. Go's server moves Host
// and Transfer-Encoding out of r.Header, so those are read from the request.
func headerValue(r *http.Request, name string) string {
	var vals []string
	switch name {
	case "host":
		vals = []string{r.Host}
	case "transfer-encoding":
		vals = r.TransferEncoding
	default:
		vals = r.Header.Values(textproto.CanonicalMIMEHeaderKey(name))
		if name == "content-length" && len(vals) == 0 && r.ContentLength >= 0 {
			vals = []string{strconv.FormatInt(r.ContentLength, 10)}
		}
	}
	out := make([]string, len(vals))
	for i, v := range vals {
		out[i] = strings.Join(strings.Fields(v), " ")
	}
	return strings.Join(out, ",")
}

func canonicalQuery(q url.Values) string {
	pairs := make([]string, 0, len(q))
	for k, vals := range q {
		for _, v := range vals {
			pairs = append(pairs, awsEscape(k, true)+"="+awsEscape(v, true))
		}
	}
	sort.Strings(pairs)
	return strings.Join(pairs, "&")
}

// awsEscape percent-encodes every byte except A-Z a-z 0-9 - _ . ~ (and '/'
// in paths), the encoding SigV4 prescribes.
func awsEscape(s string, encodeSlash bool) string {
	const hexUpper = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' ||
			c == '-' || c == '_' || c == '.' || c == '~' || (c == '/' && !encodeSlash) {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hexUpper[c>>4])
		b.WriteByte(hexUpper[c&15])
	}
	return b.String()
}

func containsHeader(signed, name string) bool {
	for _, h := range strings.Split(signed, ";") {
		if h == name {
			return true
		}
	}
	return false
}

func hmacSHA256(key []byte, data string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(data))
	return m.Sum(nil)
}
