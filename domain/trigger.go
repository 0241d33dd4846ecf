package domain

import (
	"strings"
	"time"
)

// TriggerType says how a trigger runs its function.
type TriggerType string

// Every trigger type.
const (
	TriggerHTTP TriggerType = "http" // served at /fn/{ns}/{function}/...
	TriggerCron TriggerType = "cron" // run on a 5-field cron schedule, UTC
)

// TriggerTypes lists every trigger type: code that does something per type
// switches over all of them (tests walk this list), so a new type cannot
// silently take another's branch.
func TriggerTypes() []TriggerType { return []TriggerType{TriggerHTTP, TriggerCron} }

// Trigger is the aggregate of one trigger, folded from its stream.
// Enabled is what the user asked for; Active is what the driver reports.
type Trigger struct {
	Namespace string
	Name      string
	Exists    bool
	Type      TriggerType
	Function  string
	Schedule  string
	Enabled   bool
	Active    bool
	CreatedAt time.Time
}

// TriggerSpec is a requested trigger.
type TriggerSpec struct {
	Type     string
	Function string
	Schedule string
	Enabled  bool
}

// NewTrigger returns the empty aggregate for a trigger name.
func NewTrigger(ns, name string) *Trigger { return &Trigger{Namespace: ns, Name: name} }

// Apply folds one event into the aggregate.
func (t *Trigger) Apply(ev Event) {
	switch e := ev.(type) {
	case TriggerCreated:
		*t = Trigger{Namespace: e.Namespace, Name: e.Name, Exists: true, Type: e.Type, Function: e.Function, Schedule: e.Schedule, Enabled: e.Enabled, CreatedAt: e.At}
	case TriggerEnabled:
		t.Enabled = true
	case TriggerDisabled:
		t.Enabled = false
	case TriggerActiveChanged:
		t.Active = e.Active
	case TriggerDeleted:
		*t = Trigger{Namespace: t.Namespace, Name: t.Name}
	}
}

// Create validates the spec and returns TriggerCreated, with the schedule
// trimmed of spaces (ParseCron). Whether the function exists is the
// caller's check (another aggregate). Returns EINVALID or ECONFLICT.
func (t *Trigger) Create(spec TriggerSpec, now time.Time) ([]Event, error) {
	spec.Schedule = strings.TrimSpace(spec.Schedule)
	if err := ValidateName("name", t.Name); err != nil {
		return nil, err
	}
	if t.Exists {
		return nil, Errorf(ECONFLICT, "trigger %q already exists", t.Name)
	}
	if err := ValidateName("function", spec.Function); err != nil {
		return nil, err
	}
	typ := TriggerType(spec.Type)
	switch typ {
	case TriggerHTTP:
		if spec.Schedule != "" {
			return nil, FieldErrorf("schedule", "must be empty for an http trigger")
		}
	case TriggerCron:
		if _, err := ParseCron(spec.Schedule); err != nil {
			return nil, err
		}
	case "":
		return nil, FieldErrorf("type", "is required (http or cron)")
	default:
		return nil, FieldErrorf("type", "%.40q is not a trigger type; use http or cron", spec.Type)
	}
	return []Event{TriggerCreated{Namespace: t.Namespace, Name: t.Name, Type: typ, Function: spec.Function, Schedule: spec.Schedule, Enabled: spec.Enabled, At: now}}, nil
}

// SetEnabled switches the trigger on or off; no change yields no events. Returns ENOTFOUND.
func (t *Trigger) SetEnabled(enabled bool, now time.Time) ([]Event, error) {
	if !t.Exists {
		return nil, Errorf(ENOTFOUND, "trigger %q not found", t.Name)
	}
	switch {
	case enabled == t.Enabled:
		return nil, nil
	case enabled:
		return []Event{TriggerEnabled{At: now}}, nil
	default:
		return []Event{TriggerDisabled{At: now}}, nil
	}
}

// SetActive records what the driver reports; no change (or a deleted trigger) yields no events.
func (t *Trigger) SetActive(active bool, now time.Time) []Event {
	if !t.Exists || t.Active == active {
		return nil
	}
	return []Event{TriggerActiveChanged{Active: active, At: now}}
}

// Delete returns TriggerDeleted, or ENOTFOUND.
func (t *Trigger) Delete(now time.Time) ([]Event, error) {
	if !t.Exists {
		return nil, Errorf(ENOTFOUND, "trigger %q not found", t.Name)
	}
	return []Event{TriggerDeleted{At: now}}, nil
}
