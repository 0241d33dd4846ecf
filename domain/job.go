package domain

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
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
// RunID > 0. The event must be JSON that PostgreSQL's jsonb can hold
// (checkStorableJSON). Returns EINVALID, ETOOLARGE or ECONFLICT.
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
	if err := checkStorableJSON(event); err != nil {
		return nil, err
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

// Succeed records the result of run runID (Storable: a function's output
// may hold a NUL, which PostgreSQL cannot); a stale or finished run yields
// nothing.
func (j *Job) Succeed(runID int64, result, output string, now time.Time) []Event {
	if !j.running(runID) {
		return nil
	}
	return []Event{JobSucceeded{RunID: runID, Result: Storable(result), Output: Storable(output), At: now}}
}

// Fail records the error of run runID (message truncated to 2,000 characters,
// output kept whole, both Storable); a stale or finished run yields nothing.
func (j *Job) Fail(runID int64, message, output string, now time.Time) []Event {
	if !j.running(runID) {
		return nil
	}
	return []Event{JobFailed{RunID: runID, Message: Truncate(Storable(message), MaxMessageLength), Output: Storable(output), At: now}}
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

// Limits of PostgreSQL's numeric, which holds a jsonb number: digits
// before the decimal point, digits after it, and the largest exponent
// its parser takes.
const (
	pgNumericIntDigits  = 131072
	pgNumericFracDigits = 16383
	pgNumericMaxExp     = 1<<30 - 2
)

// checkStorableJSON refuses, as EINVALID about field "event", valid JSON
// that PostgreSQL's jsonb cannot hold: text that is not UTF-8, a \u0000
// escape (in a key or a value), a surrogate escape without its pair, and a
// number out of numeric's range. The event is stored as sent, escapes and
// all, so they are looked for in the raw bytes.
func checkStorableJSON(data []byte) error {
	if !utf8.Valid(data) {
		return FieldErrorf("event", "is not valid UTF-8")
	}
	for i := 0; i < len(data); i++ {
		switch c := data[i]; {
		case c == '"':
			n, err := checkStorableString(data[i+1:])
			if err != nil {
				return err
			}
			i += n + 1
		case c == '-' || '0' <= c && c <= '9':
			j := i + 1
			for j < len(data) && strings.IndexByte("+-.0123456789eE", data[j]) >= 0 {
				j++
			}
			if !storableNumber(string(data[i:j])) {
				return FieldErrorf("event", "the number %.40s is out of the range that can be stored", data[i:j])
			}
			i = j - 1
		}
	}
	return nil
}

// checkStorableString checks the JSON string that data begins with (after
// its opening quote) and returns the length of its body: up to its closing
// quote. In valid JSON a backslash begins an escape, and \u four hex digits.
func checkStorableString(data []byte) (int, error) {
	for i := 0; i < len(data); i++ {
		switch data[i] {
		case '"':
			return i, nil
		case '\\':
			i++ // the escaped character
			if data[i] != 'u' {
				continue
			}
			r := hex4(data[i+1 : i+5])
			i += 4
			switch {
			case r == 0:
				return 0, FieldErrorf("event", "contains \\u0000, which cannot be stored; send the text without it")
			case utf16.IsSurrogate(r):
				pair := i+6 < len(data) && data[i+1] == '\\' && data[i+2] == 'u'
				if r >= 0xdc00 || !pair || utf16.DecodeRune(r, hex4(data[i+3:i+7])) == unicode.ReplacementChar {
					return 0, FieldErrorf("event", "contains the unpaired surrogate escape \\u%04x, which cannot be stored", r)
				}
				i += 6
			}
		}
	}
	return len(data), nil
}

// storableNumber reports whether the JSON number lit fits PostgreSQL's
// numeric: its value below 10^131072, and at most 16383 digits after the
// decimal point once the exponent is applied (trailing zeros count, and
// a zero is no exception).
func storableNumber(lit string) bool {
	mant, expText, hasExp := strings.Cut(strings.ToLower(strings.TrimPrefix(lit, "-")), "e")
	exp := 0
	if hasExp {
		n, err := strconv.Atoi(expText)
		if err != nil || n > pgNumericMaxExp || n < -pgNumericMaxExp {
			return false
		}
		exp = n
	}
	intPart, frac, _ := strings.Cut(mant, ".")
	if max(0, len(frac)-exp) > pgNumericFracDigits {
		return false
	}
	// The power of ten of the first digit that is not 0.
	var lead int
	if digits := strings.TrimLeft(intPart, "0"); digits != "" {
		lead = len(digits) - 1
	} else if i := strings.IndexFunc(frac, func(r rune) bool { return r != '0' }); i >= 0 {
		lead = -(i + 1)
	} else {
		return true // zero
	}
	return lead+exp < pgNumericIntDigits
}

// hex4 is the value of four hex digits, as json.Valid checked them.
func hex4(b []byte) rune {
	var r rune
	for _, c := range b {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		default:
			c -= 'A' - 10
		}
		r = r<<4 | rune(c)
	}
	return r
}
