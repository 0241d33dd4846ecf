package domain

// Scaling: the bounds and defaults of a function's instances
// (FunctionConfig.Scale). Like the async configuration it is the
// function's, not a version's: changing it makes no version, and a
// rollback keeps it.
const (
	// MaxInstances is the largest max_instances (and min_instances) a
	// function may set; the platform's own cap may be lower.
	MaxInstances = 1000
	// MaxInstanceConcurrency is the largest concurrency a function may set.
	MaxInstanceConcurrency = 1000
)

// ScaleConfig is how many instances of a function run and how many requests
// each takes at once. Zero values take the defaults: MaxInstances the
// platform's (SLESS_FN_DEFAULT_MAX_INSTANCES), Concurrency the runtime's
// (DefaultConcurrency). MinInstances 0 scales to zero when idle; n ≥ 1
// keeps n instances running, never idled out.
type ScaleConfig struct {
	MinInstances int `json:"min_instances,omitempty"`
	MaxInstances int `json:"max_instances,omitempty"`
	Concurrency  int `json:"concurrency,omitempty"`
}

// DefaultConcurrency is the requests one instance of a runtime takes at
// once when the function sets none: one for the interpreters, as AWS
// Lambda gives each request its own environment (a Python handler holds
// the GIL; a Node.js one blocks its event loop while it computes), and more
// for Go, whose handlers run in parallel.
func DefaultConcurrency(rt Runtime) int {
	if rt == RuntimeGo123 {
		return DefaultGoConcurrency
	}
	return 1
}

// DefaultGoConcurrency is DefaultConcurrency of a Go function.
const DefaultGoConcurrency = 16

// ConcurrencyOf is the function's concurrency with the runtime's default.
func (c FunctionConfig) ConcurrencyOf() int {
	if c.Scale.Concurrency > 0 {
		return c.Scale.Concurrency
	}
	return DefaultConcurrency(c.Runtime)
}

// validate returns EINVALID naming the first field out of range.
func (s ScaleConfig) validate() error {
	switch {
	case s.MinInstances < 0 || s.MinInstances > MaxInstances:
		return FieldErrorf("min_instances", "%d is out of range; use 0 (scale to zero when idle) to %d instances", s.MinInstances, MaxInstances)
	case s.MaxInstances < 0 || s.MaxInstances > MaxInstances:
		return FieldErrorf("max_instances", "%d is out of range; use 1 to %d instances, or 0 for the platform's default", s.MaxInstances, MaxInstances)
	case s.MaxInstances > 0 && s.MinInstances > s.MaxInstances:
		return FieldErrorf("min_instances", "%d is more than max_instances (%d)", s.MinInstances, s.MaxInstances)
	case s.Concurrency < 0 || s.Concurrency > MaxInstanceConcurrency:
		return FieldErrorf("concurrency", "%d is out of range; use 1 to %d requests per instance, or 0 for the runtime's default", s.Concurrency, MaxInstanceConcurrency)
	}
	return nil
}
