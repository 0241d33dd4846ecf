package provider

import (
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/diag"

	"github.com/slessio/sless/httpapi/client"
)

// TestAPIErrorNamesItsFieldOnce: the API's message names its field already;
// the diagnostic says it once, on the attribute.
func TestAPIErrorNamesItsFieldOnce(t *testing.T) {
	var diags diag.Diagnostics
	addAPIError(&diags, "create function", &client.Error{Status: 400, Code: client.CodeInvalid, Field: "memory_mb",
		Message: "memory_mb: 10 is out of range; use 64 to 4096 (MiB)"}, "memory_mb")
	if len(diags) != 1 {
		t.Fatalf("diagnostics: %v", diags)
	}
	detail := diags[0].Detail()
	if strings.Count(detail, "memory_mb:") != 1 || !strings.Contains(detail, "10 is out of range") {
		t.Fatalf("detail = %q, want the field named once", detail)
	}
}
