package provider

import (
	"errors"
	"fmt"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"

	"github.com/slessio/sless/httpapi/client"
)

// addAPIError reports err of the call named by what. An API error is shown
// with the server's message, on the attribute its field names when the
// resource has one of that name (a dotted field, "async.max_retries", is a
// nested attribute).
func addAPIError(diags *diag.Diagnostics, what string, err error, attributes ...string) {
	var apiErr *client.Error
	if !errors.As(err, &apiErr) {
		diags.AddError("sless: "+what+" failed", err.Error())
		return
	}
	// The API's message names its field already ("memory_mb: ...").
	detail := fmt.Sprintf("%s (HTTP %d %s)", apiErr.Message, apiErr.Status, apiErr.Code)
	if apiErr.Field != "" {
		for _, a := range attributes {
			if a == apiErr.Field {
				diags.AddAttributeError(attributePath(a), "sless: "+what+" failed", detail)
				return
			}
		}
	}
	diags.AddError("sless: "+what+" failed", detail)
}

// attributePath is the path of the attribute an API field names: "a" or
// "a.b" (b nested in a).
func attributePath(field string) path.Path {
	names := strings.Split(field, ".")
	p := path.Root(names[0])
	for _, n := range names[1:] {
		p = p.AtName(n)
	}
	return p
}

// clientOf returns the configured client handed to a resource or data
// source, or nil with an error when the provider data is something else.
func clientOf(data any, diags *diag.Diagnostics) *client.Client {
	if data == nil {
		return nil // Configure has not run yet (validation): nothing to do
	}
	c, ok := data.(*client.Client)
	if !ok {
		diags.AddError("sless provider bug", fmt.Sprintf("provider data is %T, not *client.Client", data))
	}
	return c
}
