package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"

	"github.com/slessio/sless/httpapi/wire"
)

// AsyncInvocation is an asynchronous invocation: its state, attempts and
// last response (GetAsyncInvocation, the dead letters).
type AsyncInvocation = wire.AsyncInvocation

// AsyncPage is a page of asynchronous invocations, newest first.
type AsyncPage = wire.AsyncList

// AsyncConfig and AsyncPatch configure a function's asynchronous invocations.
type (
	AsyncConfig = wire.AsyncConfig
	AsyncPatch  = wire.AsyncPatch
)

// AsyncOptions are the optional headers of InvokeAsync.
type AsyncOptions struct {
	// IdempotencyKey dedupes enqueues of the function for 24 hours.
	IdempotencyKey string
	// CallbackURL receives the final response (on the operator's allow-list).
	CallbackURL string
	// ContentType of body; "" for application/json when there is a body.
	ContentType string
}

// Accepted is the answer of InvokeAsync. Created is false when the
// Idempotency-Key named an invocation accepted before (its id and state).
type Accepted struct {
	wire.Accepted
	Created bool
}

// InvokeAsync queues an invocation of function with body as its event
// (POST .../functions/{name}/invoke?async=true) and returns its id once the
// platform committed it; GetAsyncInvocation reads its outcome.
//
// Errors are *Error: CodeNotFound, CodeInvalid (a bad Idempotency-Key or a
// callback off the allow-list), CodeTooLarge, CodeUnprocessable (the key
// was used for another request), and as everywhere.
func (c *Client) InvokeAsync(ctx context.Context, function string, body []byte, o AsyncOptions) (*Accepted, error) {
	cl := call{route: routeInvoke, params: []string{function}, query: url.Values{"async": {"true"}}, header: http.Header{}}
	if len(body) > 0 {
		if o.ContentType == "" {
			o.ContentType = "application/json"
		}
		cl.body, cl.contentType = bytes.NewReader(body), o.ContentType
	}
	if o.IdempotencyKey != "" {
		cl.header.Set("Idempotency-Key", o.IdempotencyKey)
	}
	if o.CallbackURL != "" {
		cl.header.Set("X-Sless-Callback-Url", o.CallbackURL)
	}
	res, path, err := c.send(ctx, cl)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusAccepted && res.StatusCode != http.StatusOK {
		return nil, readError(res)
	}
	data, err := io.ReadAll(res.Body)
	if err != nil {
		return nil, fmt.Errorf("sless client: read the answer of POST %s: %w", path, err)
	}
	out := &Accepted{Created: res.StatusCode == http.StatusAccepted}
	if err := json.Unmarshal(data, &out.Accepted); err != nil {
		return nil, fmt.Errorf("sless client: decode the answer of POST %s: %w", path, err)
	}
	return out, nil
}

// GetAsyncInvocation returns the outcome of asynchronous invocation id.
// Errors: CodeNotFound (also for an id of the invocation log that is not
// asynchronous: GetInvocation reads those).
func (c *Client) GetAsyncInvocation(ctx context.Context, function, id string) (*AsyncInvocation, error) {
	var out AsyncInvocation // a record of the log decodes without an invocation_id
	if _, err := c.doJSON(ctx, routeGetInvocation, nil, &out, function, id); err != nil {
		return nil, err
	}
	if out.InvocationID == "" {
		return nil, &Error{Status: http.StatusNotFound, Code: CodeNotFound,
			Message: fmt.Sprintf("invocation %q of %s is not asynchronous", id, function)}
	}
	return &out, nil
}

// ListDeadLetters returns a page of function's dead letters, newest first
// (limit 0: the server's default; cursor "": the first page).
func (c *Client) ListDeadLetters(ctx context.Context, function string, limit int, cursor string) (*AsyncPage, error) {
	return c.listAsync(ctx, routeListDeadLetters, function, limit, cursor)
}

// ListQueued returns a page of function's asynchronous invocations waiting
// for delivery, newest first.
func (c *Client) ListQueued(ctx context.Context, function string, limit int, cursor string) (*AsyncPage, error) {
	return c.listAsync(ctx, routeListQueued, function, limit, cursor)
}

func (c *Client) listAsync(ctx context.Context, r routeID, function string, limit int, cursor string) (*AsyncPage, error) {
	v := url.Values{}
	if limit != 0 {
		v.Set("limit", strconv.Itoa(limit))
	}
	if cursor != "" {
		v.Set("cursor", cursor)
	}
	var out AsyncPage
	if _, err := c.do(ctx, call{route: r, params: []string{function}, query: v, out: &out}); err != nil {
		return nil, err
	}
	return &out, nil
}

// RetryDeadLetter queues dead letter id of function again (same invocation
// id; its attempts continue) and returns it as queued.
func (c *Client) RetryDeadLetter(ctx context.Context, function, id string) (*AsyncInvocation, error) {
	return jsonOf[AsyncInvocation](ctx, c, routeRetryDeadLetter, nil, function, id)
}

// DeleteDeadLetter deletes dead letter id of function. Errors: CodeNotFound.
func (c *Client) DeleteDeadLetter(ctx context.Context, function, id string) error {
	_, err := c.doJSON(ctx, routeDeleteDeadLetter, nil, nil, function, id)
	return err
}

// DeleteDeadLetters deletes every dead letter of function and returns how many.
func (c *Client) DeleteDeadLetters(ctx context.Context, function string) (int, error) {
	out, err := jsonOf[wire.DeletedDeadLetters](ctx, c, routeDeleteDeadLetters, nil, function)
	if err != nil {
		return 0, err
	}
	return out.Deleted, nil
}
