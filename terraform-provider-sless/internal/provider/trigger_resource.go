package provider

import (
	"context"
	"slices"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/booldefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/httpapi/client"
)

var (
	_ resource.ResourceWithConfigure      = (*triggerResource)(nil)
	_ resource.ResourceWithImportState    = (*triggerResource)(nil)
	_ resource.ResourceWithValidateConfig = (*triggerResource)(nil)
)

func newTriggerResource() resource.Resource { return &triggerResource{} }

// triggerResource is sless_trigger: an http or cron trigger of a function.
// Only enabled changes in place (PATCH); everything else replaces it.
type triggerResource struct{ c *client.Client }

type triggerModel struct {
	Name     types.String `tfsdk:"name"`
	Type     types.String `tfsdk:"type"`
	Function types.String `tfsdk:"function"`
	Schedule types.String `tfsdk:"schedule"`
	Enabled  types.Bool   `tfsdk:"enabled"`
	URL      types.String `tfsdk:"url"`
	Active   types.Bool   `tfsdk:"active"`
}

func (r *triggerResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_trigger"
}

func (r *triggerResource) Schema(_ context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	replace := []planmodifier.String{stringplanmodifier.RequiresReplace()}
	resp.Schema = schema.Schema{
		Description: "Runs a function on HTTP requests (type http: a public URL, no token needed) or on a cron schedule (type cron).",
		Attributes: map[string]schema.Attribute{
			"name":     schema.StringAttribute{Required: true, Description: "Name of the trigger in the namespace.", Validators: []validator.String{validName("name")}, PlanModifiers: replace},
			"type":     schema.StringAttribute{Required: true, Description: "http or cron.", Validators: []validator.String{validTriggerType()}, PlanModifiers: replace},
			"function": schema.StringAttribute{Required: true, Description: "Name of the function the trigger runs.", Validators: []validator.String{validName("function")}, PlanModifiers: replace},
			"schedule": schema.StringAttribute{Optional: true, Description: "Five-field cron schedule in UTC (required for cron, not allowed for http), e.g. \"*/5 * * * *\".", Validators: []validator.String{validCron()}, PlanModifiers: replace},
			"enabled": schema.BoolAttribute{Optional: true, Computed: true, Default: booldefault.StaticBool(true),
				Description: "false stops the trigger (an http function is scaled to zero, a cron schedule pauses) without deleting it; changed in place."},
			"url":    schema.StringAttribute{Computed: true, Description: "Where an http trigger serves the function.", PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()}},
			"active": schema.BoolAttribute{Computed: true, Description: "Whether the trigger's workload is running or scheduled."},
		},
	}
}

func validTriggerType() validator.String {
	var names []string
	for _, t := range domain.TriggerTypes() {
		names = append(names, string(t))
	}
	return check{strings.Join(names, " or "), func(s string) error {
		if !slices.Contains(names, s) {
			return domain.FieldErrorf("type", "must be one of %s, not %q", strings.Join(names, ", "), s)
		}
		return nil
	}}
}

func (r *triggerResource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	r.c = clientOf(req.ProviderData, &resp.Diagnostics)
}

// ValidateConfig: a cron trigger needs a schedule, an http one has none.
func (r *triggerResource) ValidateConfig(ctx context.Context, req resource.ValidateConfigRequest, resp *resource.ValidateConfigResponse) {
	var m triggerModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() || m.Type.IsUnknown() || m.Schedule.IsUnknown() {
		return
	}
	switch {
	case m.Type.ValueString() == string(domain.TriggerCron) && m.Schedule.IsNull():
		resp.Diagnostics.AddAttributeError(path.Root("schedule"), "Missing schedule", "A cron trigger needs a schedule, e.g. \"*/5 * * * *\".")
	case m.Type.ValueString() == string(domain.TriggerHTTP) && !m.Schedule.IsNull():
		resp.Diagnostics.AddAttributeError(path.Root("schedule"), "Unexpected schedule", "An http trigger has no schedule; remove it or use type = \"cron\".")
	}
}

// triggerFields are the request fields of a trigger that are attributes.
var triggerFields = []string{"name", "type", "function", "schedule", "enabled"}

func (r *triggerResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var plan triggerModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	t, err := r.c.CreateTrigger(ctx, client.CreateTriggerRequest{
		Name: plan.Name.ValueString(), Type: domain.TriggerType(plan.Type.ValueString()), Function: plan.Function.ValueString(),
		Schedule: plan.Schedule.ValueString(), Enabled: client.Ptr(plan.Enabled.ValueBool()),
	})
	if err != nil {
		addAPIError(&resp.Diagnostics, "create trigger "+plan.Name.ValueString(), err, triggerFields...)
		return
	}
	m := triggerState(t)
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

// triggerState is the state of t.
func triggerState(t *client.Trigger) triggerModel {
	m := triggerModel{
		Name: types.StringValue(t.Name), Type: types.StringValue(string(t.Type)), Function: types.StringValue(t.Function),
		Schedule: types.StringNull(), Enabled: types.BoolValue(t.Enabled), URL: types.StringValue(t.URL), Active: types.BoolValue(t.Active),
	}
	if t.Schedule != "" {
		m.Schedule = types.StringValue(t.Schedule)
	}
	return m
}

func (r *triggerResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var state triggerModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	t, err := r.c.GetTrigger(ctx, state.Name.ValueString())
	if client.IsNotFound(err) {
		resp.State.RemoveResource(ctx)
		return
	}
	if err != nil {
		addAPIError(&resp.Diagnostics, "read trigger "+state.Name.ValueString(), err)
		return
	}
	m := triggerState(t)
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

func (r *triggerResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var plan triggerModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	t, err := r.c.SetTriggerEnabled(ctx, plan.Name.ValueString(), plan.Enabled.ValueBool())
	if err != nil {
		addAPIError(&resp.Diagnostics, "update trigger "+plan.Name.ValueString(), err, triggerFields...)
		return
	}
	m := triggerState(t)
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

func (r *triggerResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	deleteByName(ctx, "trigger", req, resp, r.c.DeleteTrigger)
}

// ImportState imports a trigger by its name.
func (r *triggerResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	importByName(ctx, "trigger", req, resp)
}
