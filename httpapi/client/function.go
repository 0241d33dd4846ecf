package client

import (
	"context"
	"time"

	"github.com/slessio/sless/domain"
)

// Function is a function as the API shows it (SPEC §2): the configuration of
// its active version and its lifecycle phase.
type Function struct {
	Namespace  string            `json:"namespace"`
	Name       string            `json:"name"`
	Runtime    string            `json:"runtime"`
	Entrypoint string            `json:"entrypoint"`
	MemoryMB   int               `json:"memory_mb"`
	TimeoutSec int               `json:"timeout_sec"`
	EnvVars    map[string]string `json:"env_vars"`
	// MaxConcurrency is how many requests the function serves at once; 0
	// means the platform's default.
	MaxConcurrency int `json:"max_concurrency"`
	// RetrySafe: a job run interrupted by a server shutdown is run again.
	RetrySafe bool                 `json:"retry_safe"`
	Phase     domain.FunctionPhase `json:"phase"`
	// Message explains the phase, e.g. the build error of a Failed function.
	Message string `json:"message"`
	// ActiveVersion is the version triggers run; 0 before the first build.
	ActiveVersion int        `json:"active_version"`
	CreatedAt     time.Time  `json:"created_at"`
	LastBuiltAt   *time.Time `json:"last_built_at"`
}

// CreateFunctionRequest is the body of CreateFunction; zero values take the
// server's defaults (memory_mb 128, timeout_sec 30, the runtime's entrypoint).
type CreateFunctionRequest struct {
	Name           string            `json:"name"`
	Runtime        string            `json:"runtime"`
	Entrypoint     string            `json:"entrypoint,omitempty"`
	MemoryMB       int               `json:"memory_mb,omitempty"`
	TimeoutSec     int               `json:"timeout_sec,omitempty"`
	EnvVars        map[string]string `json:"env_vars,omitempty"`
	MaxConcurrency int               `json:"max_concurrency,omitempty"`
	RetrySafe      bool              `json:"retry_safe,omitempty"`
}

// UpdateFunctionRequest is the body of UpdateFunction, merged over the
// current configuration: a nil field keeps its value, EnvVars replaces the
// whole map when set (an empty map clears it), and 0 for MemoryMB or
// TimeoutSec means the default. Set fields with Ptr.
type UpdateFunctionRequest struct {
	Runtime        *string            `json:"runtime,omitempty"`
	Entrypoint     *string            `json:"entrypoint,omitempty"`
	MemoryMB       *int               `json:"memory_mb,omitempty"`
	TimeoutSec     *int               `json:"timeout_sec,omitempty"`
	EnvVars        *map[string]string `json:"env_vars,omitempty"`
	MaxConcurrency *int               `json:"max_concurrency,omitempty"`
	RetrySafe      *bool              `json:"retry_safe,omitempty"`
}

// ListFunctions returns the namespace's functions.
func (c *Client) ListFunctions(ctx context.Context) ([]Function, error) {
	var out struct {
		Functions []Function `json:"functions"`
	}
	if _, err := c.doJSON(ctx, routeListFunctions, nil, &out); err != nil {
		return nil, err
	}
	return out.Functions, nil
}

// CreateFunction creates a function without code (phase Pending). Errors:
// *Error with CodeConflict when the name exists, CodeInvalid naming the
// Field of a bad name, runtime or limit.
func (c *Client) CreateFunction(ctx context.Context, req CreateFunctionRequest) (*Function, error) {
	return jsonOf[Function](ctx, c, routeCreateFunction, req)
}

// GetFunction returns one function. Errors: *Error with CodeNotFound.
func (c *Client) GetFunction(ctx context.Context, name string) (*Function, error) {
	return jsonOf[Function](ctx, c, routeGetFunction, nil, name)
}

// UpdateFunction merges req over the function's configuration; once code
// exists a change makes a new version (built when needed). Errors: *Error
// with CodeNotFound, CodeInvalid naming the Field.
func (c *Client) UpdateFunction(ctx context.Context, name string, req UpdateFunctionRequest) (*Function, error) {
	return jsonOf[Function](ctx, c, routeUpdateFunction, req, name)
}

// DeleteFunction deletes a function with its versions, triggers and
// workloads; its jobs stay. Errors: *Error with CodeNotFound.
func (c *Client) DeleteFunction(ctx context.Context, name string) error {
	_, err := c.doJSON(ctx, routeDeleteFunction, nil, nil, name)
	return err
}
