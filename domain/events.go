package domain

import (
	"encoding/json"
	"reflect"
	"time"
)

// Event is a fact that happened to an aggregate. Each event type has one payload
// struct; EventType returns the name stored in the event store.
type Event interface {
	EventType() string
}

// Event type names, as stored in the events table. They never change once released.
const (
	EventNamespaceEnsured = "namespace.ensured"

	EventFunctionCreated       = "function.created"
	EventFunctionConfigUpdated = "function.config_updated"
	EventFunctionDeleted       = "function.deleted"
	EventVersionCreated        = "version.created"
	EventBuildStarted          = "build.started"
	EventBuildSucceeded        = "build.succeeded"
	EventBuildFailed           = "build.failed"
	EventVersionActivated      = "version.activated"
	EventRolloutCompleted      = "rollout.completed"
	EventRolloutFailed         = "rollout.failed"

	EventTriggerCreated  = "trigger.created"
	EventTriggerEnabled  = "trigger.enabled"
	EventTriggerDisabled = "trigger.disabled"
	EventTriggerActive   = "trigger.active_changed"
	EventTriggerDeleted  = "trigger.deleted"

	EventJobCreated      = "job.created"
	EventJobRunRequested = "job.run_requested"
	EventJobStarted      = "job.started"
	EventJobSucceeded    = "job.succeeded"
	EventJobFailed       = "job.failed"
	EventJobDeleted      = "job.deleted"

	EventAsyncDeadLettered  = "async.dead_lettered"
	EventDeadLetterRetried  = "async.dead_letter_retried"
	EventDeadLettersDeleted = "async.dead_letters_deleted"

	EventSecretSet     = "secret.set"
	EventSecretDeleted = "secret.deleted"
)

// NamespaceEnsured records that a tenant namespace exists.
type NamespaceEnsured struct {
	Namespace string    `json:"namespace"`
	At        time.Time `json:"at"`
}

// FunctionCreated records a new function (or a re-creation after a delete).
type FunctionCreated struct {
	Namespace string         `json:"namespace"`
	Name      string         `json:"name"`
	Config    FunctionConfig `json:"config"`
	At        time.Time      `json:"at"`
}

// FunctionConfigUpdated records a new configuration; a version follows when code exists.
type FunctionConfigUpdated struct {
	Config FunctionConfig `json:"config"`
	At     time.Time      `json:"at"`
}

// FunctionDeleted records the deletion of a function with all its versions.
type FunctionDeleted struct {
	At time.Time `json:"at"`
}

// VersionCreated records a new immutable version: code digest plus config snapshot.
// When the same code was already built, Image is set and no build is needed.
type VersionCreated struct {
	Version    int            `json:"version"`
	Digest     string         `json:"digest"`
	ZipKey     string         `json:"zip_key"`
	ContextKey string         `json:"context_key"`
	Config     FunctionConfig `json:"config"`
	At         time.Time      `json:"at"`
}

// BuildStarted records that a worker began building a version.
type BuildStarted struct {
	Version int       `json:"version"`
	At      time.Time `json:"at"`
}

// BuildSucceeded records a built version and the image (or local artifact) it produced.
type BuildSucceeded struct {
	Version int       `json:"version"`
	Image   string    `json:"image"`
	Log     string    `json:"log,omitempty"`
	At      time.Time `json:"at"`
}

// BuildFailed records a failed build with its readable error and full log.
type BuildFailed struct {
	Version int       `json:"version"`
	Message string    `json:"message"`
	Log     string    `json:"log,omitempty"`
	At      time.Time `json:"at"`
}

// Reasons of a VersionActivated.
const (
	ActivationBuild    = "build"    // the newest version was built (or reused a build)
	ActivationRollback = "rollback" // a user made an older version active again
	ActivationUpload   = "upload"   // a user uploaded the code and configuration of a built version again
)

// VersionActivated records that a version became the one triggers run.
// From is 0 when no version was active before. Reason is ActivationBuild,
// ActivationRollback or ActivationUpload; the last two also make the
// version's configuration the function's.
type VersionActivated struct {
	Version int       `json:"version"`
	From    int       `json:"from"`
	Reason  string    `json:"reason"`
	At      time.Time `json:"at"`
}

// RolloutCompleted records that the driver runs the desired state of the function.
type RolloutCompleted struct {
	Version  int       `json:"version"`
	Endpoint string    `json:"endpoint,omitempty"`
	At       time.Time `json:"at"`
}

// RolloutFailed records that the driver could not converge the function.
type RolloutFailed struct {
	Version int       `json:"version"`
	Message string    `json:"message"`
	At      time.Time `json:"at"`
}

// TriggerCreated records a new trigger.
type TriggerCreated struct {
	Namespace string      `json:"namespace"`
	Name      string      `json:"name"`
	Type      TriggerType `json:"type"`
	Function  string      `json:"function"`
	Schedule  string      `json:"schedule,omitempty"`
	Enabled   bool        `json:"enabled"`
	At        time.Time   `json:"at"`
}

// TriggerEnabled records that a trigger was switched on.
type TriggerEnabled struct {
	At time.Time `json:"at"`
}

// TriggerDisabled records that a trigger was switched off.
type TriggerDisabled struct {
	At time.Time `json:"at"`
}

// TriggerActiveChanged records whether the trigger's workload actually runs.
type TriggerActiveChanged struct {
	Active bool      `json:"active"`
	At     time.Time `json:"at"`
}

// TriggerDeleted records the deletion of a trigger.
type TriggerDeleted struct {
	At time.Time `json:"at"`
}

// JobCreated records a new one-shot job definition.
type JobCreated struct {
	Namespace string          `json:"namespace"`
	Name      string          `json:"name"`
	Function  string          `json:"function"`
	Event     json.RawMessage `json:"event"`
	At        time.Time       `json:"at"`
}

// JobRunRequested records that run RunID of the job should execute.
type JobRunRequested struct {
	RunID int64     `json:"run_id"`
	At    time.Time `json:"at"`
}

// JobStarted records that run RunID began on the given function version.
type JobStarted struct {
	RunID   int64     `json:"run_id"`
	Version int       `json:"version"`
	At      time.Time `json:"at"`
}

// JobSucceeded records a run's result (the last stdout line) and its full output.
type JobSucceeded struct {
	RunID  int64     `json:"run_id"`
	Result string    `json:"result"`
	Output string    `json:"output,omitempty"`
	At     time.Time `json:"at"`
}

// JobFailed records a run's error: Message is truncated, Output holds all of it.
type JobFailed struct {
	RunID   int64     `json:"run_id"`
	Message string    `json:"message"`
	Output  string    `json:"output,omitempty"`
	At      time.Time `json:"at"`
}

// JobDeleted records the deletion of a job.
type JobDeleted struct {
	At time.Time `json:"at"`
}

// AsyncDeadLettered records that an asynchronous invocation of the
// function ran out of retries or of age and is now a dead letter; Reason
// says which, Status is the last answer's (0: none).
type AsyncDeadLettered struct {
	InvocationID string    `json:"invocation_id"`
	Attempts     int       `json:"attempts"`
	Status       int       `json:"status"`
	Reason       string    `json:"reason"`
	At           time.Time `json:"at"`
}

// DeadLetterRetried records that a dead letter was queued again (same
// invocation id; its attempts continue).
type DeadLetterRetried struct {
	InvocationID string    `json:"invocation_id"`
	At           time.Time `json:"at"`
}

// DeadLettersDeleted records the deletion of dead letters: the ids, or
// every dead letter of the function (All).
type DeadLettersDeleted struct {
	InvocationIDs []string  `json:"invocation_ids,omitempty"`
	All           bool      `json:"all,omitempty"`
	Count         int       `json:"count"`
	At            time.Time `json:"at"`
}

// SecretSet records a new version of a namespace secret. It never carries
// the value: that is sealed apart from the log (package secrets).
type SecretSet struct {
	Namespace string    `json:"namespace"`
	Name      string    `json:"name"`
	Version   int       `json:"version"`
	At        time.Time `json:"at"`
}

// SecretDeleted records the deletion of a secret with every version of
// its value (destroyed, not only hidden).
type SecretDeleted struct {
	At time.Time `json:"at"`
}

func (SecretSet) EventType() string             { return EventSecretSet }
func (SecretDeleted) EventType() string         { return EventSecretDeleted }
func (NamespaceEnsured) EventType() string      { return EventNamespaceEnsured }
func (AsyncDeadLettered) EventType() string     { return EventAsyncDeadLettered }
func (DeadLetterRetried) EventType() string     { return EventDeadLetterRetried }
func (DeadLettersDeleted) EventType() string    { return EventDeadLettersDeleted }
func (FunctionCreated) EventType() string       { return EventFunctionCreated }
func (FunctionConfigUpdated) EventType() string { return EventFunctionConfigUpdated }
func (FunctionDeleted) EventType() string       { return EventFunctionDeleted }
func (VersionCreated) EventType() string        { return EventVersionCreated }
func (BuildStarted) EventType() string          { return EventBuildStarted }
func (BuildSucceeded) EventType() string        { return EventBuildSucceeded }
func (BuildFailed) EventType() string           { return EventBuildFailed }
func (VersionActivated) EventType() string      { return EventVersionActivated }
func (RolloutCompleted) EventType() string      { return EventRolloutCompleted }
func (RolloutFailed) EventType() string         { return EventRolloutFailed }
func (TriggerCreated) EventType() string        { return EventTriggerCreated }
func (TriggerEnabled) EventType() string        { return EventTriggerEnabled }
func (TriggerDisabled) EventType() string       { return EventTriggerDisabled }
func (TriggerActiveChanged) EventType() string  { return EventTriggerActive }
func (TriggerDeleted) EventType() string        { return EventTriggerDeleted }
func (JobCreated) EventType() string            { return EventJobCreated }
func (JobRunRequested) EventType() string       { return EventJobRunRequested }
func (JobStarted) EventType() string            { return EventJobStarted }
func (JobSucceeded) EventType() string          { return EventJobSucceeded }
func (JobFailed) EventType() string             { return EventJobFailed }
func (JobDeleted) EventType() string            { return EventJobDeleted }

var eventFactories = map[string]func() Event{
	EventNamespaceEnsured:      func() Event { return &NamespaceEnsured{} },
	EventFunctionCreated:       func() Event { return &FunctionCreated{} },
	EventFunctionConfigUpdated: func() Event { return &FunctionConfigUpdated{} },
	EventFunctionDeleted:       func() Event { return &FunctionDeleted{} },
	EventVersionCreated:        func() Event { return &VersionCreated{} },
	EventBuildStarted:          func() Event { return &BuildStarted{} },
	EventBuildSucceeded:        func() Event { return &BuildSucceeded{} },
	EventBuildFailed:           func() Event { return &BuildFailed{} },
	EventVersionActivated:      func() Event { return &VersionActivated{} },
	EventRolloutCompleted:      func() Event { return &RolloutCompleted{} },
	EventRolloutFailed:         func() Event { return &RolloutFailed{} },
	EventTriggerCreated:        func() Event { return &TriggerCreated{} },
	EventTriggerEnabled:        func() Event { return &TriggerEnabled{} },
	EventTriggerDisabled:       func() Event { return &TriggerDisabled{} },
	EventTriggerActive:         func() Event { return &TriggerActiveChanged{} },
	EventTriggerDeleted:        func() Event { return &TriggerDeleted{} },
	EventJobCreated:            func() Event { return &JobCreated{} },
	EventJobRunRequested:       func() Event { return &JobRunRequested{} },
	EventJobStarted:            func() Event { return &JobStarted{} },
	EventJobSucceeded:          func() Event { return &JobSucceeded{} },
	EventJobFailed:             func() Event { return &JobFailed{} },
	EventJobDeleted:            func() Event { return &JobDeleted{} },
	EventAsyncDeadLettered:     func() Event { return &AsyncDeadLettered{} },
	EventDeadLetterRetried:     func() Event { return &DeadLetterRetried{} },
	EventDeadLettersDeleted:    func() Event { return &DeadLettersDeleted{} },
	EventSecretSet:             func() Event { return &SecretSet{} },
	EventSecretDeleted:         func() Event { return &SecretDeleted{} },
}

// DecodeEvent turns a stored (type, JSON) pair back into its payload struct
// (a value, not a pointer). It returns EINTERNAL for an unknown type or bad JSON.
func DecodeEvent(typ string, data []byte) (Event, error) {
	mk, ok := eventFactories[typ]
	if !ok {
		return nil, Errorf(EINTERNAL, "unknown event type %q", typ)
	}
	ptr := mk()
	if err := json.Unmarshal(data, ptr); err != nil {
		return nil, Errorf(EINTERNAL, "decode %s event: %v", typ, err)
	}
	return deref(ptr), nil
}

// deref returns the struct a factory pointer points to, so callers switch on values.
func deref(e Event) Event {
	return reflect.ValueOf(e).Elem().Interface().(Event)
}

// Stream ids name an aggregate's event stream: "<kind>:<namespace>/<name>".

// FunctionStream returns the stream id of a function.
func FunctionStream(ns, name string) string { return "function:" + ns + "/" + name }

// TriggerStream returns the stream id of a trigger.
func TriggerStream(ns, name string) string { return "trigger:" + ns + "/" + name }

// JobStream returns the stream id of a job.
func JobStream(ns, name string) string { return "job:" + ns + "/" + name }

// NamespaceStream returns the stream id of a namespace.
func NamespaceStream(ns string) string { return "namespace:" + ns + "/" }
