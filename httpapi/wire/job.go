package wire

import (
	"encoding/json"
	"time"

	"github.com/slessio/sless/domain"
)

// Job is a one-shot run of a function as the API shows it (SPEC §4): Message
// holds the result of a successful run or the error of a failed one, Output
// all of it.
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

// JobList is the answer of GET .../jobs.
type JobList struct {
	Jobs []Job `json:"jobs"`
}

// CreateJobRequest is the body of POST .../jobs; RunID 0 creates the job
// without running it, Event nil means {}.
type CreateJobRequest struct {
	Name     string          `json:"name"`
	Function string          `json:"function"`
	Event    json.RawMessage `json:"event,omitempty"`
	RunID    int64           `json:"run_id,omitempty"`
}

// PatchJobRequest is the body of PATCH .../jobs/{name}.
type PatchJobRequest struct {
	RunID *int64 `json:"run_id"`
}
