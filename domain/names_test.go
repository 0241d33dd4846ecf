package domain

import (
	"regexp"
	"strings"
	"testing"
)

// TestNamePredicatesMatchTheirRules: the written-out IsName and IsNamespace
// (the proxy asks them on every request) accept exactly what the rules,
// written here as regular expressions, accept.
func TestNamePredicatesMatchTheirRules(t *testing.T) {
	t.Parallel()
	dnsLabel := regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	namespace := regexp.MustCompile(`^sless-[0-9a-f]{16}$`)
	for _, s := range []string{"", "a", "a-b", "-a", "a-", "A", "ab.c", "a@b", "a%2f", "a_b", "0", "0a-9",
		strings.Repeat("a", 63), strings.Repeat("a", 64), "é", "a b", "a\x00",
		"sless-0123456789abcdef", "sless-0123456789ABCDEF", "sless-0123456789abcde", "sless-0123456789abcdeff", "sless-0123456789abcdeg", "xless-0123456789abcdef"} {
		if got, want := IsName(s), dnsLabel.MatchString(s) && len(s) <= MaxNameLength; got != want {
			t.Errorf("IsName(%q) = %v, the rule says %v", s, got, want)
		}
		if got, want := IsNamespace(s), namespace.MatchString(s); got != want {
			t.Errorf("IsNamespace(%q) = %v, the rule says %v", s, got, want)
		}
		if (ValidateName("f", s) == nil) != IsName(s) || (ValidateNamespace(s) == nil) != IsNamespace(s) {
			t.Errorf("the validators and the predicates disagree on %q", s)
		}
	}
}
