package provider

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/httpapi/client"
)

// pollInterval is how often apply asks the API while it waits.
const pollInterval = 250 * time.Millisecond

// poll calls done until it returns true or an error, or timeout passes.
func poll(ctx context.Context, timeout time.Duration, done func() (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		ok, err := done()
		if err != nil || ok {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("gave up waiting after %s", timeout)
		case <-time.After(pollInterval):
		}
	}
}

// stringMap returns a map(string) attribute as a Go map; known is false when
// it or one of its values is unknown. A null map is a nil map.
func stringMap(ctx context.Context, m types.Map, diags *diag.Diagnostics) (map[string]string, bool) {
	if m.IsUnknown() {
		return nil, false
	}
	if m.IsNull() {
		return nil, true
	}
	for _, v := range m.Elements() {
		if v.IsUnknown() {
			return nil, false
		}
	}
	out := map[string]string{}
	diags.Append(m.ElementsAs(ctx, &out, false)...)
	return out, true
}

// stringMapValue is m as a map(string) attribute (nil: empty).
func stringMapValue(m map[string]string) types.Map {
	out := make(map[string]attr.Value, len(m))
	for k, v := range m {
		out[k] = types.StringValue(v)
	}
	return types.MapValueMust(types.StringType, out)
}

// stringSetValue is s as a set(string) attribute (nil: empty).
func stringSetValue(s []string) types.Set {
	out := make([]attr.Value, 0, len(s))
	for _, v := range s {
		out = append(out, types.StringValue(v))
	}
	return types.SetValueMust(types.StringType, out)
}

// stringSet returns a set(string) attribute as a Go slice; known is false
// when it or one of its values is unknown. A null set is a nil slice.
func stringSet(ctx context.Context, s types.Set, diags *diag.Diagnostics) ([]string, bool) {
	if s.IsUnknown() {
		return nil, false
	}
	if s.IsNull() {
		return nil, true
	}
	for _, v := range s.Elements() {
		if v.IsUnknown() {
			return nil, false
		}
	}
	out := []string{}
	diags.Append(s.ElementsAs(ctx, &out, false)...)
	return out, true
}

// exactlyOneOf is a resource config validator: exactly one of the named
// attributes is set.
type exactlyOneOf []string

func (e exactlyOneOf) Description(context.Context) string {
	return "exactly one of " + strings.Join(e, ", ") + " must be set"
}
func (e exactlyOneOf) MarkdownDescription(ctx context.Context) string { return e.Description(ctx) }

func (e exactlyOneOf) ValidateResource(ctx context.Context, req resource.ValidateConfigRequest, resp *resource.ValidateConfigResponse) {
	set := 0
	for _, name := range e {
		var v types.String
		resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root(name), &v)...)
		if v.IsUnknown() {
			return
		}
		if !v.IsNull() {
			set++
		}
	}
	if set != 1 {
		resp.Diagnostics.AddAttributeError(path.Root(e[0]), "Invalid code settings", "Exactly one of "+strings.Join(e, " and ")+" must be set.")
	}
}

// importByName starts the state of an imported resource from its name,
// the import ID; Read fills in the rest.
func importByName(ctx context.Context, kind string, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	if err := domain.ValidateName("name", req.ID); err != nil {
		resp.Diagnostics.AddError("Invalid import ID", "import a "+kind+" by its name: "+messageOf(err))
		return
	}
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("name"), req.ID)...)
}

// pathName is the path of the name attribute.
var pathName = path.Root("name")

// sortedByName returns fns sorted by name.
func sortedByName(fns []client.Function) []client.Function {
	out := slices.Clone(fns)
	slices.SortFunc(out, func(a, b client.Function) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// deleteByName deletes the resource named by the state's name with del; one
// that is gone already is deleted.
func deleteByName(ctx context.Context, kind string, req resource.DeleteRequest, resp *resource.DeleteResponse, del func(context.Context, string) error) {
	var name types.String
	resp.Diagnostics.Append(req.State.GetAttribute(ctx, pathName, &name)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if err := del(ctx, name.ValueString()); err != nil && !client.IsNotFound(err) {
		addAPIError(&resp.Diagnostics, "delete "+kind+" "+name.ValueString(), err)
	}
}
