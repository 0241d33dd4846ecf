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

// TriggerTypeInfo is one trigger type's row of the trigger type table: what
// differs by type in the domain, read by everything that does something per
// type instead of a switch on the type. The job that serves a trigger is the
// other half of the table, outbox's (outbox.TriggerJob), and its worker is
// in workers; a new type is a row in each and that worker (doc.go, "Adding a
// trigger type").
type TriggerTypeInfo struct {
	// Type is the type's name.
	Type TriggerType
	// Validate checks the type's fields of a spec (Create trims the schedule
	// first) and returns EINVALID naming the first bad one.
	Validate func(spec TriggerSpec) error
	// Label is how people are told what a trigger of the type is, before
	// anything else about it (the listing's comment on a function).
	Label func(t Trigger) string
	// Workload says that the function's workload serves the trigger, at
	// the function's URL through the invoke proxy: the rollout runs the
	// function while one such trigger is enabled (it scales to zero
	// otherwise) and records the trigger active, a change of the trigger
	// rolls its function out (outbox.TriggerJob), and people are shown the
	// URL. A type without it is served by a job of its own, which every
	// rollout of the function queues again so that it follows the active
	// version (cron: its schedule).
	Workload bool
	// Scheduled says that the trigger fires by its Schedule, a cron
	// expression (ParseCron) that Validate requires: people are shown the
	// schedule and when it fires next. A type without it has no schedule.
	Scheduled bool
}

// triggerTypes is the trigger type table, in the order of TriggerTypes:
// the first type a function has a trigger of is what people are told the
// function is (the listing).
var triggerTypes = []TriggerTypeInfo{
	{Type: TriggerHTTP, Workload: true,
		Validate: func(spec TriggerSpec) error {
			if spec.Schedule != "" {
				return FieldErrorf("schedule", "must be empty for an http trigger")
			}
			return nil
		},
		Label: func(Trigger) string { return "HTTP endpoint" }},
	{Type: TriggerCron, Scheduled: true,
		Validate: func(spec TriggerSpec) error {
			_, err := ParseCron(spec.Schedule)
			return err
		},
		Label: func(t Trigger) string { return "Cron '" + t.Schedule + "'" }},
}

// TriggerTypes lists every trigger type, in the table's order: code that
// does something per type reads the type's row (TriggerType.Info), and the
// tests that walk this list show a new type that has no row where one is
// needed (outbox.TriggerJob, the API's request cases).
func TriggerTypes() []TriggerType {
	out := make([]TriggerType, len(triggerTypes))
	for i, row := range triggerTypes {
		out[i] = row.Type
	}
	return out
}

// Info returns typ's row of the trigger type table; false, and the zero
// row (no Workload, not Scheduled), for a type that has none.
func (typ TriggerType) Info() (TriggerTypeInfo, bool) {
	for _, row := range triggerTypes {
		if row.Type == typ {
			return row, true
		}
	}
	return TriggerTypeInfo{}, false
}

// triggerTypeList names every trigger type for a message: "http or cron".
func triggerTypeList() string {
	names := make([]string, len(triggerTypes))
	for i, row := range triggerTypes {
		names[i] = string(row.Type)
	}
	return strings.Join(names, " or ")
}

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
	info, ok := typ.Info()
	switch {
	case typ == "":
		return nil, FieldErrorf("type", "is required (%s)", triggerTypeList())
	case !ok:
		return nil, FieldErrorf("type", "%.40q is not a trigger type; use %s", spec.Type, triggerTypeList())
	}
	if err := info.Validate(spec); err != nil {
		return nil, err
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
