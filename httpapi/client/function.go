package client

import (
	"context"
	"strings"

	"github.com/slessio/sless/httpapi/wire"
)

// Function is a function as the API shows it (SPEC §2): the configuration of
// its active version and its lifecycle phase.
type Function = wire.Function

// CreateFunctionRequest is the body of CreateFunction; zero values take the
// server's defaults (memory_mb 128, timeout_sec 30, the runtime's entrypoint).
type CreateFunctionRequest = wire.CreateFunctionRequest

// UpdateFunctionRequest is the body of UpdateFunction, merged over the
// current configuration: a nil field keeps its value, EnvVars, Secrets and
// SecretFiles replace the whole map or list when set (an empty one clears
// it), and 0 for MemoryMB or TimeoutSec means the default. Set fields with
// Ptr.
type UpdateFunctionRequest = wire.UpdateFunctionRequest

// ListFunctions returns the namespace's functions.
func (c *Client) ListFunctions(ctx context.Context) ([]Function, error) {
	var out wire.FunctionList
	if _, err := c.doJSON(ctx, routeListFunctions, nil, &out); err != nil {
		return nil, err
	}
	return out.Functions, nil
}

// FunctionListing returns the namespace's human listing (SPEC §7): one
// line of comment and the details of each function, active ones first, and
// a footer with the namespace and the count, as plain text.
func (c *Client) FunctionListing(ctx context.Context) (string, error) {
	var b strings.Builder
	_, err := c.do(ctx, call{route: routeListFunctions, accept: "text/plain", text: &b})
	return b.String(), err
}

// CreateFunction creates a function without code (phase Pending). Errors:
// *Error with CodeConflict when the name exists, CodeInvalid naming the
// Field of a bad name, runtime or limit, CodeUnprocessable (Field "secrets")
// when it uses a secret that does not exist. Function.Warnings points out
// risky configuration, such as a credential in a plain env var.
func (c *Client) CreateFunction(ctx context.Context, req CreateFunctionRequest) (*Function, error) {
	return jsonOf[Function](ctx, c, routeCreateFunction, req)
}

// GetFunction returns one function. Errors: *Error with CodeNotFound.
func (c *Client) GetFunction(ctx context.Context, name string) (*Function, error) {
	return jsonOf[Function](ctx, c, routeGetFunction, nil, name)
}

// UpdateFunction merges req over the function's configuration; once code
// exists a change makes a new version (built when needed). Errors: *Error
// with CodeNotFound, CodeInvalid naming the Field, CodeUnprocessable (Field
// "secrets") for a secret that does not exist; Function.Warnings as in
// CreateFunction.
func (c *Client) UpdateFunction(ctx context.Context, name string, req UpdateFunctionRequest) (*Function, error) {
	return jsonOf[Function](ctx, c, routeUpdateFunction, req, name)
}

// DeleteFunction deletes a function with its versions, triggers and
// workloads; its jobs stay. Errors: *Error with CodeNotFound.
func (c *Client) DeleteFunction(ctx context.Context, name string) error {
	_, err := c.doJSON(ctx, routeDeleteFunction, nil, nil, name)
	return err
}
