package invoke

import (
	"errors"
	"io"
	"net/http"
	"strings"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/store"
)

// The headers of an asynchronous invocation.
const (
	// TypeHeader chooses the invocation type: "async" queues the request
	// and answers 202; "sync" (or none) calls the function on the spot.
	TypeHeader = "X-Sless-Invocation-Type"
	// CallbackHeader names where the final response of an async invocation
	// is POSTed; it must be on the operator's allow-list.
	CallbackHeader = "X-Sless-Callback-Url"
	// IdempotencyHeader dedupes enqueues of one function for 24 h.
	IdempotencyHeader = "Idempotency-Key"
	// AsyncPrefix is the path alias of /fn/ that always queues (as
	// OpenFaaS's /async-function/).
	AsyncPrefix = "/async-fn/"
	// AsyncIDHeader and AttemptHeader tell the function, on each delivery
	// of an asynchronous invocation, its id (the same at every attempt:
	// the key to make its effects happen once) and the attempt (1, 2, ...).
	// The proxy writes them; a caller's own are never passed on.
	AsyncIDHeader = "X-Sless-Async-Id"
	AttemptHeader = "X-Sless-Attempt"
)

// IsAsync reads TypeHeader: true for "async", false for none or "sync"
// (any case); EINVALID for anything else.
func IsAsync(h http.Header) (bool, error) {
	switch v := h.Get(TypeHeader); strings.ToLower(v) {
	case "":
		return false, nil
	case "sync", "requestresponse":
		return false, nil
	case "async", "event":
		return true, nil
	default:
		return false, domain.FieldErrorf(TypeHeader, "%.40q is not an invocation type; use async or sync", v)
	}
}

// notStored are the request headers an async invocation does not keep: the
// ones about queueing it, and the framing of a body that is stored whole.
var notStored = map[string]bool{TypeHeader: true, CallbackHeader: true, IdempotencyHeader: true,
	"Content-Length": true, "Transfer-Encoding": true, "Connection": true, "Keep-Alive": true, "Te": true,
	"Trailer": true, "Upgrade": true, "Proxy-Connection": true, "Expect": true}

// ReadAsync reads the request to queue from r: its method, path (below
// the function, escaped as received), query, headers (without the
// caller's platform credentials when owner: the API's token and the
// console's cookie) and body, which may be at most maxBody bytes
// (ETOOLARGE, before anything is stored). It returns the request and its
// Idempotency-Key (EINVALID when malformed).
func ReadAsync(r *http.Request, path string, maxBody int64, owner bool) (store.AsyncRequest, string, error) {
	key := r.Header.Get(IdempotencyHeader)
	if _, given := r.Header[IdempotencyHeader]; given {
		if err := domain.ValidateIdempotencyKey(key); err != nil {
			return store.AsyncRequest{}, "", err
		}
	}
	if r.ContentLength > maxBody {
		return store.AsyncRequest{}, "", TooLarge(maxBody)
	}
	var body []byte
	if r.Body != nil && r.Body != http.NoBody {
		var err error
		body, err = io.ReadAll(io.LimitReader(r.Body, maxBody+1))
		if err != nil {
			var mbe *http.MaxBytesError
			if errors.As(err, &mbe) {
				return store.AsyncRequest{}, "", TooLarge(maxBody)
			}
			return store.AsyncRequest{}, "", domain.Errorf(domain.EINVALID, "the request body could not be read: %v", err)
		}
		if int64(len(body)) > maxBody {
			return store.AsyncRequest{}, "", TooLarge(maxBody)
		}
	}
	headers := make(map[string][]string, len(r.Header))
	for k, v := range r.Header {
		if notStored[k] || (owner && (k == "Authorization" || k == "Cookie")) {
			continue
		}
		headers[k] = v
	}
	return store.AsyncRequest{Method: r.Method, Path: path, Query: r.URL.RawQuery, Headers: headers, Body: body,
		CallbackURL: r.Header.Get(CallbackHeader), RemoteAddr: r.RemoteAddr, Host: r.Host}, key, nil
}

// TooLarge is the ETOOLARGE of a body over limit bytes.
func TooLarge(limit int64) error {
	return domain.Errorf(domain.ETOOLARGE, "the request body is larger than %d bytes", limit)
}
