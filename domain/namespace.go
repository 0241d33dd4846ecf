package domain

import (
	"strings"
	"time"
)

// IsNamespace reports whether ns has the form of every tenant namespace:
// "sless-" and 16 lower-case hex digits. Written out, not a regular
// expression: the function proxy asks it on every request.
func IsNamespace(ns string) bool {
	hex, ok := strings.CutPrefix(ns, "sless-")
	if !ok || len(hex) != 16 {
		return false
	}
	for i := 0; i < len(hex); i++ {
		if c := hex[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// ValidateNamespace checks the "sless-" + 16 hex digits form every tenant namespace has.
func ValidateNamespace(ns string) error {
	if !IsNamespace(ns) {
		return FieldErrorf("namespace", "%q is not a sless namespace (sless- followed by 16 hex digits)", ns)
	}
	return nil
}

// Namespace is the aggregate of a tenant namespace.
type Namespace struct {
	Name   string
	Exists bool
}

// Apply folds one event into the aggregate.
func (n *Namespace) Apply(ev Event) {
	if _, ok := ev.(NamespaceEnsured); ok {
		n.Exists = true
	}
}

// Ensure returns NamespaceEnsured the first time and nothing after: ensure is idempotent.
func (n *Namespace) Ensure(now time.Time) ([]Event, error) {
	if err := ValidateNamespace(n.Name); err != nil {
		return nil, err
	}
	if n.Exists {
		return nil, nil
	}
	return []Event{NamespaceEnsured{Namespace: n.Name, At: now}}, nil
}
