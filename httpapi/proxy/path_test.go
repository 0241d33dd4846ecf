package proxy

import (
	"strings"
	"testing"

	"github.com/slessio/sless/domain"
)

// TestNameChecksMatchTheDomain: the proxy's hand-written checks accept
// exactly what the domain's validators accept.
func TestNameChecksMatchTheDomain(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"", "a", "a-b", "-a", "a-", "A", "ab.c", "a@b", "a%2f", "a_b", "0", "0a-9",
		strings.Repeat("a", 63), strings.Repeat("a", 64), "é", "a b", "a\\x00",
		"sless-0123456789abcdef", "sless-0123456789ABCDEF", "sless-0123456789abcde", "sless-0123456789abcdeff", "sless-0123456789abcdeg", "xless-0123456789abcdef"} {
		if got, want := isName(s), domain.ValidateName("f", s) == nil; got != want {
			t.Errorf("isName(%q) = %v, domain says %v", s, got, want)
		}
		if got, want := isNamespace(s), domain.ValidateNamespace(s) == nil; got != want {
			t.Errorf("isNamespace(%q) = %v, domain says %v", s, got, want)
		}
	}
}
