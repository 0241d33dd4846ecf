package wire

import (
	"time"

	"github.com/slessio/sless/domain"
)

// Version is one immutable version of a function: code digest, configuration
// snapshot and build outcome. BuildLog is set only when one version is asked
// for, Activation only in the answer of an upload.
type Version struct {
	Version     int                `json:"version"`
	Digest      string             `json:"digest"`
	BuildStatus domain.BuildStatus `json:"build_status"`
	Image       string             `json:"image"`
	Message     string             `json:"message"`
	Active      bool               `json:"active"`
	Config      Config             `json:"config"`
	CreatedAt   time.Time          `json:"created_at"`
	BuiltAt     *time.Time         `json:"built_at"`
	BuildLog    *string            `json:"build_log,omitempty"`
	// Activation is set in the answer of an upload whose code and
	// configuration were those of this built version, which the upload made
	// active again without a rebuild (reason "upload"), as a rollback does.
	Activation *Activation `json:"activation,omitempty"`
}

// Config is the configuration snapshot a version was made with.
type Config struct {
	Runtime        string            `json:"runtime"`
	Entrypoint     string            `json:"entrypoint"`
	MemoryMB       int               `json:"memory_mb"`
	TimeoutSec     int               `json:"timeout_sec"`
	EnvVars        map[string]string `json:"env_vars"`
	MaxConcurrency int               `json:"max_concurrency"`
	RetrySafe      bool              `json:"retry_safe" doc:"true: a job run interrupted by a server shutdown is run again; false: it fails with \"interrupted by shutdown\""`
}

// VersionList is the answer of GET .../versions: every version newest first,
// which one is active, and the activation history (who, when, from, to).
type VersionList struct {
	Function      string    `json:"function"`
	ActiveVersion int       `json:"active_version"`
	Versions      []Version `json:"versions"`
	// Activations record every change of the active version, newest first.
	Activations []Activation `json:"activations"`
}

// Activation is one change of a function's active version. Reason is
// "build" (the newest version was built, or reused a build), "rollback" or
// "upload" (the code and configuration of a built version were uploaded
// again).
type Activation struct {
	Version     int       `json:"version"`
	FromVersion int       `json:"from_version"`
	Reason      string    `json:"reason"`
	Actor       string    `json:"actor"`
	ActivatedAt time.Time `json:"activated_at"`
}

// RollbackRequest is the body of POST .../rollback.
type RollbackRequest struct {
	Version int `json:"version"`
}
