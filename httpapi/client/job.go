package client

import (
	"context"
	"net/url"

	"github.com/slessio/sless/httpapi/wire"
)

// Job is a one-shot run of a function (SPEC §4). Message holds the result of
// a successful run or the error of a failed one, Output all of it.
type Job = wire.Job

// CreateJobRequest is the body of CreateJob; RunID 0 creates the job without
// running it, Event nil means {}.
type CreateJobRequest = wire.CreateJobRequest

// ListJobs returns the namespace's jobs, only function's when it is not "".
func (c *Client) ListJobs(ctx context.Context, function string) ([]Job, error) {
	var out wire.JobList
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
	return jsonOf[Job](ctx, c, routePatchJob, wire.PatchJobRequest{RunID: &runID}, name)
}

// DeleteJob deletes a job and cancels its unfinished runs. Errors: *Error
// with CodeNotFound.
func (c *Client) DeleteJob(ctx context.Context, name string) error {
	_, err := c.doJSON(ctx, routeDeleteJob, nil, nil, name)
	return err
}
