package domain

import (
	"regexp"
	"time"
)

var namespaceRE = regexp.MustCompile(`^sless-[0-9a-f]{16}$`)

// ValidateNamespace checks the "sless-" + 16 hex digits form every tenant namespace has.
func ValidateNamespace(ns string) error {
	if !namespaceRE.MatchString(ns) {
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
