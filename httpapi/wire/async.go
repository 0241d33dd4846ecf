package wire

import (
	"encoding/json"
	"net/http"
	"time"
)

// Accepted is the answer to an asynchronous enqueue: 202 with the new
// invocation's id (its outcome at the Location header), or 200 with the
// invocation that an Idempotency-Key named already.
type Accepted struct {
	InvocationID string `json:"invocation_id"`
	State        string `json:"state" doc:"queued, running, succeeded, failed or dead_lettered"`
}

// OutcomePath is where the owner reads an invocation's outcome.
func OutcomePath(ns, function, id string) string {
	return "/v1/namespaces/" + ns + "/functions/" + function + "/invocations/" + id
}

// WriteAccepted writes the answer to an enqueue of invocation id of
// ns/function (the proxy's /fn and the API's invoke): 202 when created, 200
// for a repeat under its Idempotency-Key; Location names its outcome.
func WriteAccepted(w http.ResponseWriter, ns, function, id, state string, created bool) {
	status := http.StatusOK
	if created {
		status = http.StatusAccepted
	}
	body, _ := json.Marshal(Accepted{InvocationID: id, State: state})
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Location", OutcomePath(ns, function, id))
	h.Set("X-Sless-Invocation-Id", id)
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(append(body, '\n'))
}

// AsyncInvocation is an asynchronous invocation: its request, where it is,
// every attempt, and the function's last answer.
type AsyncInvocation struct {
	InvocationID   string `json:"invocation_id"`
	Function       string `json:"function"`
	State          string `json:"state" doc:"queued, running, succeeded, failed (an answer that is not retried: a 4xx other than 429) or dead_lettered"`
	IdempotencyKey string `json:"idempotency_key,omitempty"`
	// Request is the request as it was accepted (its body's size only).
	Request  AsyncRequest   `json:"request"`
	Attempts []AsyncAttempt `json:"attempts"`
	// Response is the function's last answer; null before one.
	Response *AsyncResponse `json:"response"`
	// Error is why it failed or was given up ("retries exhausted", "event too old").
	Error string `json:"error"`
	// Callback is where the final response is POSTed and how that went.
	Callback   *AsyncCallback `json:"callback,omitempty"`
	EnqueuedAt time.Time      `json:"enqueued_at"`
	FinishedAt *time.Time     `json:"finished_at"`
}

// AsyncRequest is the accepted request of an asynchronous invocation.
type AsyncRequest struct {
	Method    string `json:"method"`
	Path      string `json:"path"`
	Query     string `json:"query"`
	BodyBytes int    `json:"body_bytes"`
}

// AsyncAttempt is one delivery attempt; status 0 means no answer (error says why).
type AsyncAttempt struct {
	Attempt   int       `json:"attempt"`
	StartedAt time.Time `json:"started_at"`
	EndedAt   time.Time `json:"ended_at"`
	Status    int       `json:"status"`
	Error     string    `json:"error,omitempty"`
}

// AsyncResponse is the function's answer: its body as text, or base64 when
// it is not UTF-8 (body_encoding "base64").
type AsyncResponse struct {
	Status       int                 `json:"status"`
	Headers      map[string][]string `json:"headers"`
	Body         string              `json:"body"`
	BodyEncoding string              `json:"body_encoding,omitempty"`
}

// AsyncCallback is the callback of an asynchronous invocation.
type AsyncCallback struct {
	URL   string `json:"url"`
	State string `json:"state" doc:"empty until sent; delivered; or failed: why"`
}

// AsyncList is a page of asynchronous invocations (dead letters, queued work), newest first.
type AsyncList struct {
	Invocations []AsyncInvocation `json:"invocations"`
	// NextCursor is the ?cursor= of the next page, "" on the last.
	NextCursor string `json:"next_cursor"`
}

// DeletedDeadLetters is the answer of DELETE .../dead-letters.
type DeletedDeadLetters struct {
	Deleted int `json:"deleted"`
}
