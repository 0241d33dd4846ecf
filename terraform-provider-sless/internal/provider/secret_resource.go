package provider

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/httpapi/client"
)

// MaxSecretValueBytes is the largest value the server takes
// (secrets.MaxValueBytes, which a test compares it with: the provider does
// not link the server's packages).
const MaxSecretValueBytes = 64 << 10

var (
	_ resource.ResourceWithConfigure   = (*secretResource)(nil)
	_ resource.ResourceWithImportState = (*secretResource)(nil)
)

func newSecretResource() resource.Resource { return &secretResource{} }

// secretResource is sless_secret: a namespace secret. The API never returns
// a value, so the value in the state is the one Terraform set; a version
// the server has and the state does not (a set outside Terraform) plans the
// value again.
type secretResource struct{ c *client.Client }

type secretModel struct {
	Name    types.String `tfsdk:"name"`
	Value   types.String `tfsdk:"value"`
	Version types.Int64  `tfsdk:"version"`
	UsedBy  types.List   `tfsdk:"used_by"`
}

func (r *secretResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_secret"
}

func (r *secretResource) Schema(_ context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	resp.Schema = schema.Schema{
		Description: "A secret of the namespace: a value functions receive as an environment variable (sless_function's secrets) or as the file /run/secrets/<name> (secret_files). " +
			"Setting a new value makes a new version, and every function using the secret a new version running it; apply waits until they serve it. " +
			"The API never returns the value, but Terraform 1.5 has no write-only attributes, so the value is kept in the state: it is sensitive (never shown in plan or apply output), " +
			"and the state must be protected like the secret itself (an encrypted, access-controlled backend). A value set outside Terraform (a newer version) plans the configured value again.",
		Attributes: map[string]schema.Attribute{
			"name": schema.StringAttribute{
				Required: true,
				Description: "Name of the secret in the namespace; changing it replaces the secret. A secret a function uses cannot be deleted: to rename one, " +
					"give it lifecycle { create_before_destroy = true }, so that its functions move to the new name before the old one goes.",
				Validators: []validator.String{validName("name")}, PlanModifiers: []planmodifier.String{stringplanmodifier.RequiresReplace()},
			},
			"value": schema.StringAttribute{
				Required: true, Sensitive: true,
				Description: fmt.Sprintf("The value: text of at most %d KiB. Write-only on the API's side, but stored in the Terraform state.", MaxSecretValueBytes>>10),
				Validators:  []validator.String{validSecretValue()},
			},
			"version": schema.Int64Attribute{
				Computed: true, Description: "The newest version of the value: each set makes one.",
			},
			"used_by": schema.ListAttribute{
				Computed: true, ElementType: types.StringType, Description: "The functions whose configuration uses the secret, sorted.",
			},
		},
	}
}

func validSecretValue() validator.String {
	return check{fmt.Sprintf("a value of at most %d KiB", MaxSecretValueBytes>>10), func(s string) error {
		if len(s) > MaxSecretValueBytes {
			return fmt.Errorf("is %d bytes, over the limit of %d KiB", len(s), MaxSecretValueBytes>>10)
		}
		return nil
	}}
}

func (r *secretResource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	r.c = clientOf(req.ProviderData, &resp.Diagnostics)
}

// secretFields are the request fields of a secret that are attributes.
var secretFields = []string{"name", "value"}

func (r *secretResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	r.set(ctx, req.Plan.Get, &resp.State, &resp.Diagnostics)
}

func (r *secretResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	r.set(ctx, req.Plan.Get, &resp.State, &resp.Diagnostics)
}

// set sets the planned value (a new version), saves the state and waits
// until the functions it rolled serve the new value.
func (r *secretResource) set(ctx context.Context, getPlan func(context.Context, any) diag.Diagnostics, state stateSetter, diags *diag.Diagnostics) {
	var plan secretModel
	diags.Append(getPlan(ctx, &plan)...)
	if diags.HasError() {
		return
	}
	name := plan.Name.ValueString()
	s, err := r.c.SetSecret(ctx, name, []byte(plan.Value.ValueString()))
	if err != nil {
		addAPIError(diags, "set secret "+name, err, secretFields...)
		return
	}
	m := secretState(s, plan.Value)
	diags.Append(state.Set(ctx, &m)...)
	for _, rolled := range s.Rolled {
		if err := waitServing(ctx, r.c, rolled, defaultBuildTimeoutSec*time.Second); err != nil {
			diags.AddError(fmt.Sprintf("sless: function %s does not serve the new value of secret %s", rolled.Function, name), err.Error())
		}
	}
}

// waitServing waits until rolled's function serves the version the set
// made, or a later one (which takes the secret's newest value too); a
// function deleted meanwhile is done.
func waitServing(ctx context.Context, c *client.Client, rolled client.RolledFunction, timeout time.Duration) error {
	return poll(ctx, timeout, func() (bool, error) {
		fn, err := c.GetFunction(ctx, rolled.Function)
		switch {
		case client.IsNotFound(err):
			return true, nil
		case err != nil:
			return false, err
		case fn.ActiveVersion >= rolled.Version && fn.Phase == domain.PhaseFailed:
			return false, fmt.Errorf("version %d of %s does not run: %s", fn.ActiveVersion, fn.Name, fn.Message)
		}
		return fn.ServingVersion >= rolled.Version && fn.Phase == domain.PhaseReady, nil
	})
}

// secretState is the state of s with value, which the API does not return.
func secretState(s *client.Secret, value types.String) secretModel {
	used := make([]attr.Value, 0, len(s.UsedBy))
	for _, fn := range s.UsedBy {
		used = append(used, types.StringValue(fn))
	}
	return secretModel{Name: types.StringValue(s.Name), Value: value, Version: types.Int64Value(int64(s.Version)),
		UsedBy: types.ListValueMust(types.StringType, used)}
}

func (r *secretResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var state secretModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	s, err := r.c.GetSecret(ctx, state.Name.ValueString())
	if client.IsNotFound(err) {
		resp.State.RemoveResource(ctx) // deleted outside Terraform: planned for re-creation
		return
	}
	if err != nil {
		addAPIError(&resp.Diagnostics, "read secret "+state.Name.ValueString(), err)
		return
	}
	value := state.Value
	if state.Version.IsNull() || state.Version.ValueInt64() != int64(s.Version) {
		value = types.StringNull() // set outside Terraform, or imported: the configured value is planned again
	}
	m := secretState(s, value)
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

func (r *secretResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	deleteByName(ctx, "secret", req, resp, r.c.DeleteSecret)
}

// ImportState imports a secret by its name; its value cannot be read, so
// the first apply after the import sets the configured value again.
func (r *secretResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	importByName(ctx, "secret", req, resp)
}
