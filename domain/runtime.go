package domain

import (
	"regexp"
	"strings"
)

// Runtime names a language runtime a function runs on.
type Runtime string

// The runtimes sless knows.
const (
	RuntimePython311 Runtime = "python3.11"
	RuntimeNodeJS20  Runtime = "nodejs20"
	RuntimeGo123     Runtime = "go1.23"
)

// entrypointSyntax is how a runtime's entrypoint is spelled.
type entrypointSyntax int

const (
	entrypointDotted   entrypointSyntax = iota // module.function, at most 255 characters
	entrypointExported                         // an exported Go identifier
)

// runtimeTable is what the domain knows of each runtime, in the order of
// Runtimes: its default entrypoint and how an entrypoint is spelled. It is
// the one place these facts live; what drivers need (wrapper, build steps,
// environment) is the runtime's description in package runtimes. A new
// runtime is one row here plus its folder there (runtimes/doc.go).
var runtimeTable = []struct {
	runtime           Runtime
	defaultEntrypoint string
	syntax            entrypointSyntax
}{
	{RuntimePython311, "handler.handle", entrypointDotted},
	{RuntimeNodeJS20, "index.handle", entrypointDotted},
	{RuntimeGo123, "Handle", entrypointExported},
}

// Runtimes lists every known runtime, in a stable order.
var Runtimes = func() []Runtime {
	out := make([]Runtime, len(runtimeTable))
	for i, row := range runtimeTable {
		out[i] = row.runtime
	}
	return out
}()

var (
	dottedEntryRE = regexp.MustCompile(`^[A-Za-z_$][A-Za-z0-9_$]*(\.[A-Za-z_$][A-Za-z0-9_$]*)+$`)
	goExportedRE  = regexp.MustCompile(`^[A-Z][A-Za-z0-9_]*$`)
)

// MaxEntrypointLength bounds the entrypoint of a function of any runtime.
const MaxEntrypointLength = 255

// maxQuotedRuntime is the longest unknown runtime an error repeats.
const maxQuotedRuntime = 64

// ParseRuntime returns the Runtime named s, or EINVALID naming the known ones.
func ParseRuntime(s string) (Runtime, error) {
	for _, r := range Runtimes {
		if string(r) == s {
			return r, nil
		}
	}
	switch {
	case s == "":
		return "", FieldErrorf("runtime", "is required (one of %s)", runtimeList())
	case len(s) > maxQuotedRuntime: // not echoed whole
		return "", FieldErrorf("runtime", "is not supported (%d bytes long); use one of %s", len(s), runtimeList())
	}
	return "", FieldErrorf("runtime", "%q is not supported; use one of %s", s, runtimeList())
}

func runtimeList() string {
	names := make([]string, len(Runtimes))
	for i, r := range Runtimes {
		names[i] = string(r)
	}
	return strings.Join(names, ", ")
}

// DefaultEntrypoint is the entrypoint a function of runtime r gets when none
// is given; handler.handle for a runtime sless does not know.
func DefaultEntrypoint(r Runtime) string {
	for _, row := range runtimeTable {
		if row.runtime == r {
			return row.defaultEntrypoint
		}
	}
	return "handler.handle"
}

// ValidateEntrypoint checks entrypoint syntax for runtime r: `module.function` for
// Python and Node.js, an exported Go identifier for Go, at most
// MaxEntrypointLength characters either way. It returns EINVALID.
func ValidateEntrypoint(r Runtime, entrypoint string) error {
	if entrypoint == "" {
		return FieldErrorf("entrypoint", "is required")
	}
	if err := ValidateText("entrypoint", entrypoint, MaxEntrypointLength); err != nil {
		return err // before any message quotes it
	}
	syntax := entrypointDotted
	for _, row := range runtimeTable {
		if row.runtime == r {
			syntax = row.syntax
		}
	}
	if syntax == entrypointExported {
		if !goExportedRE.MatchString(entrypoint) {
			return FieldErrorf("entrypoint", "%q must be an exported Go function name such as Handle", entrypoint)
		}
		return nil
	}
	if !dottedEntryRE.MatchString(entrypoint) {
		return FieldErrorf("entrypoint", "%q must look like module.function, e.g. handler.handle", entrypoint)
	}
	return nil
}
