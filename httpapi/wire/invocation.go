package wire

import "time"

// Invocation is one recorded run of a function in a listing (SPEC §5), without
// its log: an HTTP request, a cron slot, a job run or a call through the
// API's invoke.
type Invocation struct {
	ID       string `json:"id"`
	Function string `json:"function"`
	Version  int    `json:"version"`
	// Trigger is "http" (/fn), "cron", "job" or "api" (POST
	// .../functions/{name}/invoke and the console's invoke panel).
	Trigger    string    `json:"trigger"`
	Method     string    `json:"method"`
	Path       string    `json:"path"`
	Status     int       `json:"status"`
	DurationMS float64   `json:"duration_ms"`
	ColdStart  bool      `json:"cold_start"`
	BytesIn    int64     `json:"bytes_in"`
	BytesOut   int64     `json:"bytes_out"`
	Error      string    `json:"error"`
	StartedAt  time.Time `json:"started_at"`
	EndedAt    time.Time `json:"ended_at"`
	// AsyncID and Attempt name the asynchronous invocation this record is
	// an attempt of; left out for other invocations.
	AsyncID string `json:"async_id,omitempty"`
	Attempt int    `json:"attempt,omitempty"`
}

// InvocationDetail is one invocation with the function's log of it.
type InvocationDetail struct {
	Invocation
	Log string `json:"log"`
}

// InvocationList is the answer of GET .../invocations: a page of the
// invocation log, newest first.
type InvocationList struct {
	Invocations []Invocation `json:"invocations"`
	// NextCursor is the ?cursor= of the next page, "" on the last.
	NextCursor string `json:"next_cursor"`
}
