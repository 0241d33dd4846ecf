package provider

import (
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"

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

// TestAPIErrorOnANestedAttribute: an API field of the async configuration
// ("async.max_retries") is shown on the nested attribute.
func TestAPIErrorOnANestedAttribute(t *testing.T) {
	var diags diag.Diagnostics
	addAPIError(&diags, "update function", &client.Error{Status: 400, Code: client.CodeInvalid, Field: "async.max_retries",
		Message: "async.max_retries: 11 is out of range; use 0 to 10 retries after the first attempt"}, functionFields...)
	if len(diags) != 1 {
		t.Fatalf("diagnostics: %v", diags)
	}
	d, ok := diags[0].(diag.DiagnosticWithPath)
	if want := path.Root("async").AtName("max_retries"); !ok || !d.Path().Equal(want) {
		t.Fatalf("diagnostic %v; want it on %s", diags[0], want)
	}
}
