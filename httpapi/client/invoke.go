package client

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
)

// Headers of an invoke's answer, set by the platform (httpapi/proxy).
const (
	// InvocationHeader names the invocation record (GetInvocation) of an
	// answer of Invoke or of a function's /fn URL.
	InvocationHeader = "X-Sless-Invocation-Id"
	// ErrorHeader marks an answer the platform gave instead of the
	// function (its value is the error code); a function cannot set it.
	ErrorHeader = "X-Sless-Error"
)

// InvokeResult is a function's answer to Invoke, whatever its status: a
// function answering 404 or 500 itself is a result, not an error.
type InvokeResult struct {
	// Status is the function's HTTP status.
	Status int
	// Header holds the function's response headers (hop-by-hop ones
	// removed), with the platform's InvocationHeader.
	Header http.Header
	// Body is the function's response body, whole.
	Body []byte
	// InvocationID names the invocation's record (GetInvocation).
	InvocationID string
}

// Invoke calls function synchronously with body as its event (JSON, or
// any body as the function's HTTP wrapper takes it) and returns its answer
// (POST .../functions/{name}/invoke). contentType is the body's media type,
// "" for application/json when there is a body. No trigger is needed: a
// function with none, or with its triggers disabled, starts for the call.
// The call is recorded with trigger kind "api".
//
// Errors — answers of the platform, not of the function — are *Error:
// CodeNotFound (no such function), CodeConflict (no built version yet, or
// its build failed: the message says which), CodeTooLarge, CodeRateLimited
// (the function's max_concurrency), CodeUnavailable (it could not start),
// CodeTimeout (past its timeout_sec), CodeBadGateway (no answer), and
// CodeUnauthorized, CodeForbidden as everywhere.
func (c *Client) Invoke(ctx context.Context, function string, body []byte, contentType string) (*InvokeResult, error) {
	cl := call{route: routeInvoke, params: []string{function}, accept: anyType}
	if len(body) > 0 {
		if contentType == "" {
			contentType = "application/json"
		}
		cl.body, cl.contentType = bytes.NewReader(body), contentType
	}
	res, path, err := c.send(ctx, cl)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	id := res.Header.Get(InvocationHeader)
	// The function's answers carry the invocation's id and never
	// ErrorHeader; the API's errors (an unknown function, a bad token)
	// carry no id, the proxy's (a timeout, a refusal) ErrorHeader.
	if res.StatusCode >= 400 && (id == "" || res.Header.Get(ErrorHeader) != "") {
		return nil, readError(res)
	}
	data, err := io.ReadAll(res.Body)
	if err != nil {
		return nil, fmt.Errorf("sless client: read the answer of POST %s: %w", path, err)
	}
	return &InvokeResult{Status: res.StatusCode, Header: res.Header, Body: data, InvocationID: id}, nil
}
