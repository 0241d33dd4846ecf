package domain

import (
	"encoding/json"
	"time"
)

// JobPhase is where the latest run of a job is:
//
//	Pending ──run requested/started──► Running ──► Succeeded | Failed
//
// A job with run_id 0 stays Pending; raising run_id starts a new run.
type JobPhase string

// Every job phase.
const (
	JobPhasePending   JobPhase = "Pending"
	JobPhaseRunning   JobPhase = "Running"
	JobPhaseSucceeded JobPhase = "Succeeded"
	JobPhaseFailed    JobPhase = "Failed"
)

// MaxJobEventBytes caps a job's input event.
const MaxJobEventBytes = 256 << 10

// Job is the aggregate of a one-shot job, folded from its stream.
type Job struct {
	Namespace   string
	Name        string
	Exists      bool
	Function    string
	Event       json.RawMessage
	RunID       int64
	Phase       JobPhase
	Version     int
	Message     string
	Output      string
	StartedAt   time.Time
	CompletedAt time.Time
	CreatedAt   time.Time
	// Incarnation counts the creations of a job of this name (see
	// Function.Incarnation): a re-created job counts its runs from 1 again.
	Incarnation int
}

// JobSpec is a requested job; RunID 0 creates it without running it.
type JobSpec struct {
	Function string
	Event    json.RawMessage
	RunID    int64
}

// NewJob returns the empty aggregate for a job name.
func NewJob(ns, name string) *Job { return &Job{Namespace: ns, Name: name} }

// Apply folds one event into the aggregate.
func (j *Job) Apply(ev Event) {
	switch e := ev.(type) {
	case JobCreated:
		*j = Job{Namespace: e.Namespace, Name: e.Name, Exists: true, Function: e.Function, Event: e.Event, Phase: JobPhasePending, CreatedAt: e.At,
			Incarnation: j.Incarnation + 1}
	case JobRunRequested:
		j.RunID, j.Phase, j.Message, j.Output, j.Version = e.RunID, JobPhasePending, "", "", 0
		j.StartedAt, j.CompletedAt = time.Time{}, time.Time{}
	case JobStarted:
		if e.RunID == j.RunID {
			j.Phase, j.Version, j.StartedAt = JobPhaseRunning, e.Version, e.At
		}
	case JobSucceeded:
		if e.RunID == j.RunID {
			j.Phase, j.Message, j.Output, j.CompletedAt = JobPhaseSucceeded, e.Result, e.Output, e.At
		}
	case JobFailed:
		if e.RunID == j.RunID {
			j.Phase, j.Message, j.Output, j.CompletedAt = JobPhaseFailed, e.Message, e.Output, e.At
		}
	case JobDeleted:
		*j = Job{Namespace: j.Namespace, Name: j.Name, Incarnation: j.Incarnation}
	}
}

// Create validates the spec and returns JobCreated, plus JobRunRequested when
// RunID > 0. Returns EINVALID, ETOOLARGE or ECONFLICT.
func (j *Job) Create(spec JobSpec, now time.Time) ([]Event, error) {
	if err := ValidateName("name", j.Name); err != nil {
		return nil, err
	}
	if j.Exists {
		return nil, Errorf(ECONFLICT, "job %q already exists", j.Name)
	}
	if err := ValidateName("function", spec.Function); err != nil {
		return nil, err
	}
	if spec.RunID < 0 {
		return nil, FieldErrorf("run_id", "must be 0 or positive, not %d", spec.RunID)
	}
	event := spec.Event
	if len(event) == 0 || string(event) == "null" {
		event = json.RawMessage(`{}`)
	}
	if len(event) > MaxJobEventBytes {
		return nil, &Error{Code: ETOOLARGE, Field: "event", Message: "event: is larger than 256 KiB"}
	}
	if !json.Valid(event) {
		return nil, FieldErrorf("event", "is not valid JSON")
	}
	evs := []Event{JobCreated{Namespace: j.Namespace, Name: j.Name, Function: spec.Function, Event: event, At: now}}
	if spec.RunID > 0 {
		evs = append(evs, JobRunRequested{RunID: spec.RunID, At: now})
	}
	return evs, nil
}

// SetRunID runs the job again when runID grows; the same value yields nothing,
// a smaller one is EINVALID. Returns ENOTFOUND for a missing job.
func (j *Job) SetRunID(runID int64, now time.Time) ([]Event, error) {
	if !j.Exists {
		return nil, Errorf(ENOTFOUND, "job %q not found", j.Name)
	}
	switch {
	case runID == j.RunID:
		return nil, nil
	case runID < j.RunID:
		return nil, FieldErrorf("run_id", "can only grow: it is %d, asked %d", j.RunID, runID)
	}
	return []Event{JobRunRequested{RunID: runID, At: now}}, nil
}

// Start records that run runID began on a function version. A stale or
// already-started run yields nothing (at-least-once delivery).
func (j *Job) Start(runID int64, version int, now time.Time) []Event {
	if !j.Exists || runID != j.RunID || j.Phase != JobPhasePending {
		return nil
	}
	return []Event{JobStarted{RunID: runID, Version: version, At: now}}
}

// Succeed records the result of run runID; a stale or finished run yields nothing.
func (j *Job) Succeed(runID int64, result, output string, now time.Time) []Event {
	if !j.running(runID) {
		return nil
	}
	return []Event{JobSucceeded{RunID: runID, Result: result, Output: output, At: now}}
}

// Fail records the error of run runID (message truncated to 2,000 characters,
// output kept whole); a stale or finished run yields nothing.
func (j *Job) Fail(runID int64, message, output string, now time.Time) []Event {
	if !j.running(runID) {
		return nil
	}
	return []Event{JobFailed{RunID: runID, Message: Truncate(message, MaxMessageLength), Output: output, At: now}}
}

func (j *Job) running(runID int64) bool {
	return j.Exists && runID == j.RunID && (j.Phase == JobPhaseRunning || j.Phase == JobPhasePending)
}

// Finished reports whether the current run has an outcome.
func (j *Job) Finished() bool { return j.Phase == JobPhaseSucceeded || j.Phase == JobPhaseFailed }

// Delete returns JobDeleted, or ENOTFOUND.
func (j *Job) Delete(now time.Time) ([]Event, error) {
	if !j.Exists {
		return nil, Errorf(ENOTFOUND, "job %q not found", j.Name)
	}
	return []Event{JobDeleted{At: now}}, nil
}
