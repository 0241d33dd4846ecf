package client_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/slessio/sless/httpapi/auth"
	"github.com/slessio/sless/httpapi/client"
)

// testEnsureNamespace: ensure is idempotent and tells a creation apart;
// another tenant's namespace is 403.
func testEnsureNamespace(t *testing.T, f *fixture) {
	ctx := context.Background()
	c, sub := f.tenant(t)
	if c.Namespace() != auth.Namespace(sub) {
		t.Fatalf("namespace %q, want %q", c.Namespace(), auth.Namespace(sub))
	}
	first, err := c.EnsureNamespace(ctx)
	if err != nil {
		t.Fatal(err)
	}
	again, err := c.EnsureNamespace(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if *first != (client.EnsureResult{Namespace: c.Namespace(), Created: true}) || *again != (client.EnsureResult{Namespace: c.Namespace()}) {
		t.Fatalf("ensure twice: %+v, then %+v", first, again)
	}

	// Another tenant's namespace, set explicitly, is refused.
	other, err := client.New(f.url, mint(t, testSecret, sub), client.WithNamespace("sless-0000000000000000"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = other.EnsureNamespace(ctx)
	wantError(t, err, http.StatusForbidden, client.CodeForbidden, "")
}

// TestNamespaceOf checks the namespace derived from a token (SPEC §1) and
// the base URL and namespace New accepts.
func TestNamespaceOf(t *testing.T) {
	t.Parallel()
	// The example of SPEC §1.
	ns, err := client.NamespaceOf(mint(t, testSecret, "019cc268-6c6a-781e-8613-4bed4ec7cd20"))
	if err != nil || ns != "sless-ffd1f598c169b0ae" {
		t.Fatalf("NamespaceOf = %q, %v; want sless-ffd1f598c169b0ae", ns, err)
	}
	for _, bad := range []string{"", "opaque-api-key", "a.b.c", "e30.e30.sig" /* {} has no sub */} {
		if ns, err := client.NamespaceOf(bad); err == nil {
			t.Errorf("NamespaceOf(%q) = %q, want an error", bad, ns)
		}
	}

	if _, err := client.New("http://localhost:8080", "opaque-api-key"); err == nil {
		t.Error("New derived a namespace from a token that is not a JWT")
	}
	c, err := client.New("http://localhost:8080/", "opaque-api-key", client.WithNamespace("sless-0123456789abcdef"))
	if err != nil || c.Namespace() != "sless-0123456789abcdef" {
		t.Fatalf("New with WithNamespace: %v", err)
	}
	for _, base := range []string{"localhost:8080", "/v1", "ftp://example.com", ""} {
		if _, err := client.New(base, "", client.WithNamespace("sless-0123456789abcdef")); err == nil {
			t.Errorf("New accepted the base URL %q", base)
		}
	}
}
