package domain

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Limits and defaults of a function's configuration (SPEC §2).
const (
	DefaultMemoryMB   = 128
	MinMemoryMB       = 64
	MaxMemoryMB       = 4096
	DefaultTimeoutSec = 30
	MinTimeoutSec     = 1
	MaxTimeoutSec     = 900
	MaxConcurrency    = 10000 // the largest max_concurrency a function may set
	MaxNameLength     = 63
	MaxEnvVars        = 100
	MaxEnvBytes       = 64 << 10
	MaxMessageLength  = 2000
	MaxScheduleLength = 256      // a cron schedule, after trimming spaces
	MaxBuildLog       = 64 << 10 // a version keeps the last 64 KiB of its build's output
)

var (
	envVarNameRE   = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	reservedEnvVar = map[string]bool{"PORT": true, "HOME": true, "PATH": true}
)

// IsName reports whether s is a valid name: a DNS-1123 label (lower-case
// letters, digits and '-', starting and ending with a letter or digit) of at
// most MaxNameLength characters. Written out, not a regular expression: the
// function proxy asks it on every request.
func IsName(s string) bool {
	if s == "" || len(s) > MaxNameLength || s[0] == '-' || s[len(s)-1] == '-' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// ValidateName checks that name is a DNS-1123 label of at most 63 characters, as
// Kubernetes object names and URL segments need. field names the request field
// in the EINVALID error it returns.
func ValidateName(field, name string) error {
	switch {
	case name == "":
		return FieldErrorf(field, "is required")
	case len(name) > MaxNameLength:
		return FieldErrorf(field, "%.63q is %d characters long; at most %d are allowed", name, len(name), MaxNameLength)
	case !IsName(name):
		return FieldErrorf(field, "%q must consist of lower-case letters, digits and '-', and start and end with a letter or digit", name)
	}
	return nil
}

// ValidateEnvVars checks env var names and sizes. Names the platform sets itself
// (PORT, SLESS_*) are refused so a function cannot break its own wrapper.
func ValidateEnvVars(env map[string]string) error {
	if len(env) > MaxEnvVars {
		return FieldErrorf("env_vars", "has %d entries; at most %d are allowed", len(env), MaxEnvVars)
	}
	total := 0
	keys := make([]string, 0, len(env))
	for k := range env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		switch {
		case !envVarNameRE.MatchString(k):
			return FieldErrorf("env_vars", "name %.64q must match [A-Za-z_][A-Za-z0-9_]*", k)
		case reservedEnvVar[k] || strings.HasPrefix(strings.ToUpper(k), "SLESS_"):
			return FieldErrorf("env_vars", "name %.64q is reserved by the platform", k)
		case !utf8.ValidString(env[k]):
			return FieldErrorf("env_vars", "value of %.64q is not valid UTF-8", k)
		}
		// Line breaks and tabs are text (a PEM key spans lines); other
		// control characters are not, and PostgreSQL cannot store a NUL.
		if r, ok := controlChar(env[k], "\t\n\r"); ok {
			return FieldErrorf("env_vars", "value of %.64q contains the control character %U", k, r)
		}
		total += len(k) + len(env[k])
	}
	if total > MaxEnvBytes {
		return &Error{Code: ETOOLARGE, Field: "env_vars", Message: "env_vars: names and values add up to more than 64 KiB"}
	}
	return nil
}

// ValidateText checks that s, the value of field, is text PostgreSQL can
// store and a person can read: valid UTF-8 of at most max characters,
// without control characters (NUL, tabs and line breaks included). The
// EINVALID it returns names field and does not quote s, which may be long.
func ValidateText(field, s string, max int) error {
	if !utf8.ValidString(s) {
		return FieldErrorf(field, "is not valid UTF-8")
	}
	if n := utf8.RuneCountInString(s); n > max {
		return FieldErrorf(field, "is %d characters long; at most %d are allowed", n, max)
	}
	if r, ok := controlChar(s, ""); ok {
		return FieldErrorf(field, "contains the control character %U", r)
	}
	return nil
}

// controlChar returns the first control character of s (C0, DEL or C1)
// that allowed does not list.
func controlChar(s, allowed string) (rune, bool) {
	for _, r := range s {
		if unicode.IsControl(r) && !strings.ContainsRune(allowed, r) {
			return r, true
		}
	}
	return 0, false
}

// Storable returns s as PostgreSQL can store it, for text the platform
// records rather than refuses (a function's output): a NUL and every byte
// that is not UTF-8 become U+FFFD.
func Storable(s string) string {
	if utf8.ValidString(s) && !strings.ContainsRune(s, 0) {
		return s
	}
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
}

// Truncate shortens s to at most max bytes on a rune boundary, marking the cut.
func Truncate(s string, max int) string {
	if len(s) <= max {
		return s
	}
	const marker = "…[truncated]"
	cut := max - len(marker)
	if cut < 0 {
		cut = 0
	}
	for cut > 0 && (s[cut]&0xC0) == 0x80 {
		cut--
	}
	return s[:cut] + marker
}

// TruncateStart returns the last max bytes of s (at a UTF-8 boundary) after
// a line saying how much was cut, or s when it fits: the end of a build's
// output is where its error is.
func TruncateStart(s string, max int) string {
	if len(s) <= max {
		return s
	}
	cut := len(s) - max
	for cut < len(s) && (s[cut]&0xC0) == 0x80 {
		cut++
	}
	return fmt.Sprintf("[sless: the first %d bytes of this log were cut]\n", cut) + s[cut:]
}
