package domain

import (
	"strings"
	"time"
)

// Asynchronous invocation: the defaults and bounds of a function's async
// configuration (FunctionConfig.Async).
const (
	DefaultAsyncMaxRetries     = 2
	MaxAsyncMaxRetries         = 10
	DefaultAsyncMaxEventAgeSec = 6 * 3600
	MinAsyncMaxEventAgeSec     = 60
	MaxAsyncMaxEventAgeSec     = 6 * 3600
	// MaxIdempotencyKey is the longest Idempotency-Key, in bytes.
	MaxIdempotencyKey = 255
	// IdempotencyWindow is how long an Idempotency-Key dedupes enqueues.
	IdempotencyWindow = 24 * time.Hour
)

// AsyncConfig is how a function's asynchronous invocations are delivered:
// attempts after the first (MaxRetries), how old an event may get before it
// is given up (MaxEventAgeSec), and how many deliveries run at once
// (MaxConcurrency, 0 = no bound of its own). A nil *AsyncConfig in a
// FunctionConfig means the defaults (AsyncPolicy).
type AsyncConfig struct {
	MaxRetries     int `json:"max_retries"`
	MaxEventAgeSec int `json:"max_event_age_sec"`
	MaxConcurrency int `json:"max_concurrency"`
}

// DefaultAsyncConfig is the configuration of a function that sets none.
func DefaultAsyncConfig() AsyncConfig {
	return AsyncConfig{MaxRetries: DefaultAsyncMaxRetries, MaxEventAgeSec: DefaultAsyncMaxEventAgeSec}
}

// AsyncPolicy returns the function's async configuration with defaults.
func (c FunctionConfig) AsyncPolicy() AsyncConfig {
	if c.Async == nil {
		return DefaultAsyncConfig()
	}
	return *c.Async
}

// runsLike says whether c and o run a function alike: equal but for their
// async and scale configurations, which belong to the function and not to
// a version.
func (c FunctionConfig) runsLike(o FunctionConfig) bool {
	c.Async, c.Scale = o.Async, o.Scale
	return c.Equal(o)
}

// validate returns EINVALID naming the first field out of range.
func (a AsyncConfig) validate() error {
	if a.MaxRetries < 0 || a.MaxRetries > MaxAsyncMaxRetries {
		return FieldErrorf("async.max_retries", "%d is out of range; use 0 to %d retries after the first attempt", a.MaxRetries, MaxAsyncMaxRetries)
	}
	if a.MaxEventAgeSec < MinAsyncMaxEventAgeSec || a.MaxEventAgeSec > MaxAsyncMaxEventAgeSec {
		return FieldErrorf("async.max_event_age_sec", "%d is out of range; use %d to %d (seconds)", a.MaxEventAgeSec, MinAsyncMaxEventAgeSec, MaxAsyncMaxEventAgeSec)
	}
	if a.MaxConcurrency < 0 || a.MaxConcurrency > MaxConcurrency {
		return FieldErrorf("async.max_concurrency", "%d is out of range; use 1 to %d deliveries at once, or 0 for no bound of its own", a.MaxConcurrency, MaxConcurrency)
	}
	return nil
}

// ValidateIdempotencyKey returns EINVALID for a key that is empty, longer
// than MaxIdempotencyKey or holds control characters.
func ValidateIdempotencyKey(key string) error {
	if key == "" || len(key) > MaxIdempotencyKey || strings.ContainsFunc(key, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return FieldErrorf("Idempotency-Key", "must be 1 to %d bytes without control characters", MaxIdempotencyKey)
	}
	return nil
}

// AsyncState is where an asynchronous invocation is.
type AsyncState string

const (
	AsyncQueued    AsyncState = "queued"
	AsyncRunning   AsyncState = "running"
	AsyncSucceeded AsyncState = "succeeded"
	AsyncFailed    AsyncState = "failed" // a final answer that is not retried (4xx other than 429)
	AsyncDead      AsyncState = "dead_lettered"
)

// Finished says whether the state is final (a dead letter may be retried).
func (s AsyncState) Finished() bool {
	return s == AsyncSucceeded || s == AsyncFailed || s == AsyncDead
}

// DeadLetter decides that asynchronous invocation id, after attempts
// attempts, is a dead letter (reason: "retries exhausted" or "event too
// old"). ENOTFOUND when the function does not exist.
func (f *Function) DeadLetter(id string, attempts, status int, reason string, now time.Time) ([]Event, error) {
	if err := f.mustExist(); err != nil {
		return nil, err
	}
	return []Event{AsyncDeadLettered{InvocationID: id, Attempts: attempts, Status: status, Reason: reason, At: now}}, nil
}

// RetryDeadLetter decides that dead letter id is queued again.
func (f *Function) RetryDeadLetter(id string, now time.Time) ([]Event, error) {
	if err := f.mustExist(); err != nil {
		return nil, err
	}
	return []Event{DeadLetterRetried{InvocationID: id, At: now}}, nil
}

// DeleteDeadLetters decides the deletion of count dead letters: ids, or
// all of them. Deleting none appends nothing.
func (f *Function) DeleteDeadLetters(ids []string, all bool, count int, now time.Time) ([]Event, error) {
	if err := f.mustExist(); err != nil {
		return nil, err
	}
	if count == 0 {
		return nil, nil
	}
	return []Event{DeadLettersDeleted{InvocationIDs: ids, All: all, Count: count, At: now}}, nil
}
