package wire

import (
	"time"

	"github.com/slessio/sless/domain"
)

// Trigger is a trigger as the API shows it (SPEC §3): it runs a function on
// HTTP requests or a cron schedule.
type Trigger struct {
	Namespace string             `json:"namespace"`
	Name      string             `json:"name"`
	Type      domain.TriggerType `json:"type"`
	Function  string             `json:"function"`
	Schedule  string             `json:"schedule,omitempty"`
	Enabled   bool               `json:"enabled"`
	// Active is true when the trigger's workload is running or scheduled.
	Active bool `json:"active"`
	// URL is where an http trigger serves the function (no token needed).
	URL string `json:"url,omitempty"`
	// NextRunAt is the next slot of an enabled cron trigger.
	NextRunAt *time.Time `json:"next_run_at,omitempty"`
	CreatedAt time.Time  `json:"created_at"`
}

// TriggerList is the answer of GET .../triggers.
type TriggerList struct {
	Triggers []Trigger `json:"triggers"`
}

// CreateTriggerRequest is the body of POST .../triggers; Enabled nil means true.
type CreateTriggerRequest struct {
	Name     string             `json:"name"`
	Type     domain.TriggerType `json:"type"`
	Function string             `json:"function"`
	Schedule string             `json:"schedule,omitempty"`
	Enabled  *bool              `json:"enabled,omitempty"`
}

// PatchTriggerRequest is the body of PATCH .../triggers/{name}.
type PatchTriggerRequest struct {
	Enabled *bool `json:"enabled"`
}
