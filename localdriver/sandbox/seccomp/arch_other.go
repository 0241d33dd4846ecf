//go:build !linux || !(amd64 || arm64)

package seccomp

// auditArch is 0: Filter does not know this architecture (or system).
const auditArch = 0

// x32Bit is unused without a filter.
const x32Bit = 0

// absent and numbers are empty without a filter.
var (
	absent  = map[string]bool{}
	numbers = map[string]uint32{}
)
