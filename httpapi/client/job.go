package client

import (
	"context"
	"encoding/json"
	"net/url"
	"time"

	"github.com/slessio/sless/domain"
)

// Job is a one-shot run of a function (SPEC §4). Message holds the result of
// a successful run or the error of a failed one, Output all of it.
type Job struct {
	Namespace string          `json:"namespace"`
	Name      string          `json:"name"`
	Function  string          `json:"function"`
	Event     json.RawMessage `json:"event"`
	// RunID counts the runs asked for; raising it runs the job again.
	RunID       int64           `json:"run_id"`
	Phase       domain.JobPhase `json:"phase"`
	Version     int             `json:"version"`
	Message     string          `json:"message"`
	Output      string          `json:"output"`
	StartedAt   *time.Time      `json:"started_at"`
	CompletedAt *time.Time      `json:"completed_at"`
	CreatedAt   time.Time       `json:"created_at"`
}

// CreateJobRequest is the body of CreateJob; RunID 0 creates the job without
// running it, Event nil means {}.
type CreateJobRequest struct {
	Name     string          `json:"name"`
	Function string          `json:"function"`
	Event    json.RawMessage `json:"event,omitempty"`
	RunID    int64           `json:"run_id,omitempty"`
}

// ListJobs returns the namespace's jobs, only function's when it is not "".
func (c *Client) ListJobs(ctx context.Context, function string) ([]Job, error) {
	var out struct {
		Jobs []Job `json:"jobs"`
	}
	var q url.Values
	if function != "" {
		q = url.Values{"function": {function}}
	}
	if _, err := c.do(ctx, call{route: routeListJobs, query: q, out: &out}); err != nil {
		return nil, err
	}
	return out.Jobs, nil
}

// CreateJob creates a job, running it when RunID > 0. Errors: *Error with
// CodeConflict when the name exists (read it back with GetJob),
// CodeUnprocessable (Field "function") when the function does not exist.
func (c *Client) CreateJob(ctx context.Context, req CreateJobRequest) (*Job, error) {
	return jsonOf[Job](ctx, c, routeCreateJob, req)
}

// GetJob returns one job with its phase, result or error. Errors: *Error
// with CodeNotFound.
func (c *Client) GetJob(ctx context.Context, name string) (*Job, error) {
	return jsonOf[Job](ctx, c, routeGetJob, nil, name)
}

// SetJobRunID runs the job again when runID is larger than its RunID; the
// same runID changes nothing. Errors: *Error with CodeNotFound, CodeInvalid
// for a smaller runID, CodeUnprocessable when the function is gone.
func (c *Client) SetJobRunID(ctx context.Context, name string, runID int64) (*Job, error) {
	return jsonOf[Job](ctx, c, routePatchJob, map[string]int64{"run_id": runID}, name)
}

// DeleteJob deletes a job and cancels its unfinished runs. Errors: *Error
// with CodeNotFound.
func (c *Client) DeleteJob(ctx context.Context, name string) error {
	_, err := c.doJSON(ctx, routeDeleteJob, nil, nil, name)
	return err
}
