package provider

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/int64default"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/httpapi/client"
)

// defaultWaitTimeoutSec is wait_timeout_sec when left out (SPEC §8).
const defaultWaitTimeoutSec = 300

var (
	_ resource.ResourceWithConfigure   = (*jobResource)(nil)
	_ resource.ResourceWithImportState = (*jobResource)(nil)
	_ resource.ResourceWithModifyPlan  = (*jobResource)(nil)
)

func newJobResource() resource.Resource { return &jobResource{} }

// jobResource is sless_job: a one-shot run of a function with an event.
// run_id 0 creates it without running; raising run_id runs it again and
// apply waits for the run's outcome. Creating a job whose name exists adopts
// the existing job.
type jobResource struct{ c *client.Client }

type jobModel struct {
	Name           types.String `tfsdk:"name"`
	Function       types.String `tfsdk:"function"`
	EventJSON      types.String `tfsdk:"event_json"`
	RunID          types.Int64  `tfsdk:"run_id"`
	WaitTimeoutSec types.Int64  `tfsdk:"wait_timeout_sec"`
	Phase          types.String `tfsdk:"phase"`
	StartTime      types.String `tfsdk:"start_time"`
	CompletionTime types.String `tfsdk:"completion_time"`
	Message        types.String `tfsdk:"message"`
}

func (r *jobResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_job"
}

func (r *jobResource) Schema(_ context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	replace := []planmodifier.String{stringplanmodifier.RequiresReplace()}
	resp.Schema = schema.Schema{
		Description: "A one-shot run of a function with an event. run_id 0 creates the job without running it; raising run_id runs it again, and apply waits for the run's outcome (a failed run fails the apply with the function's error). Creating a job whose name exists adopts it.",
		Attributes: map[string]schema.Attribute{
			"name":     schema.StringAttribute{Required: true, Description: "Name of the job in the namespace.", Validators: []validator.String{validName("name")}, PlanModifiers: replace},
			"function": schema.StringAttribute{Required: true, Description: "Name of the function the job runs.", Validators: []validator.String{validName("function")}, PlanModifiers: replace},
			"event_json": schema.StringAttribute{Optional: true, Computed: true, Default: stringdefault.StaticString("{}"),
				Description: "The event the function gets, as JSON (jsonencode(...)); default {}.", Validators: []validator.String{validJSON()}, PlanModifiers: replace},
			"run_id": schema.Int64Attribute{Optional: true, Computed: true, Default: int64default.StaticInt64(0),
				Description: "Counts the runs asked for: 0 creates the job without running it, a higher value runs it again (in place).",
				Validators:  []validator.Int64{between("run_id", 0, 1<<53)}},
			"wait_timeout_sec": schema.Int64Attribute{Optional: true, Computed: true, Default: int64default.StaticInt64(defaultWaitTimeoutSec),
				Description: "How long apply waits for a run to finish (default 300).", Validators: []validator.Int64{between("wait_timeout_sec", 1, 24*3600)}},
			"phase":           schema.StringAttribute{Computed: true, Description: "Pending, Running, Succeeded or Failed: where the latest run is."},
			"start_time":      schema.StringAttribute{Computed: true, Description: "When the latest run started (RFC 3339)."},
			"completion_time": schema.StringAttribute{Computed: true, Description: "When the latest run ended (RFC 3339)."},
			"message":         schema.StringAttribute{Computed: true, Description: "The function's result of a successful run, or the error of a failed one."},
		},
	}
}

func (r *jobResource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	r.c = clientOf(req.ProviderData, &resp.Diagnostics)
}

// ModifyPlan refuses to lower run_id (a run cannot be taken back) and keeps
// the outcome of the last run when run_id stays.
func (r *jobResource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if req.Plan.Raw.IsNull() || req.State.Raw.IsNull() {
		return
	}
	var plan, state jobModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() || plan.RunID.IsUnknown() {
		return
	}
	if plan.RunID.ValueInt64() < state.RunID.ValueInt64() && plan.Name.Equal(state.Name) && plan.Function.Equal(state.Function) && plan.EventJSON.Equal(state.EventJSON) {
		resp.Diagnostics.AddAttributeError(path.Root("run_id"), "run_id cannot go down",
			fmt.Sprintf("job %s has run_id %d; set run_id to %d to keep it or higher to run it again.", state.Name.ValueString(), state.RunID.ValueInt64(), state.RunID.ValueInt64()))
		return
	}
	if plan.RunID.Equal(state.RunID) {
		plan.Phase, plan.StartTime, plan.CompletionTime, plan.Message = state.Phase, state.StartTime, state.CompletionTime, state.Message
		resp.Diagnostics.Append(resp.Plan.Set(ctx, &plan)...)
	}
}

func (r *jobResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var plan jobModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	name := plan.Name.ValueString()
	j, err := r.c.CreateJob(ctx, client.CreateJobRequest{
		Name: name, Function: plan.Function.ValueString(), Event: json.RawMessage(plan.EventJSON.ValueString()), RunID: plan.RunID.ValueInt64(),
	})
	if client.IsConflict(err) {
		// The name exists: adopt that job, as the prototype's users rely
		// on, and run it when the configuration asks for a later run.
		j, err = r.c.GetJob(ctx, name)
		if err == nil && j.RunID > plan.RunID.ValueInt64() {
			resp.Diagnostics.AddAttributeError(path.Root("run_id"), "run_id is behind the existing job's",
				fmt.Sprintf("Job %s exists with run_id %d; set run_id to %d to adopt it, or higher to run it again.", name, j.RunID, j.RunID))
			return
		}
		if err == nil && j.RunID < plan.RunID.ValueInt64() {
			j, err = r.c.SetJobRunID(ctx, name, plan.RunID.ValueInt64())
		}
	}
	if err != nil {
		addAPIError(&resp.Diagnostics, "create job "+name, err, "name", "function", "run_id")
		return
	}
	r.waitAndSave(ctx, plan, j, &resp.State, &resp.Diagnostics)
}

// waitAndSave waits for the run asked for by j's run_id to finish, when
// there is one, and saves the job's state; a failed run is an error.
func (r *jobResource) waitAndSave(ctx context.Context, plan jobModel, j *client.Job, state stateSetter, diags *diag.Diagnostics) {
	name := plan.Name.ValueString()
	if j.RunID > 0 {
		timeout := time.Duration(plan.WaitTimeoutSec.ValueInt64()) * time.Second
		err := poll(ctx, timeout, func() (bool, error) {
			got, err := r.c.GetJob(ctx, name)
			if err != nil {
				return false, err
			}
			j = got
			return j.RunID >= plan.RunID.ValueInt64() && (j.Phase == domain.JobPhaseSucceeded || j.Phase == domain.JobPhaseFailed), nil
		})
		if err != nil {
			diags.AddError(fmt.Sprintf("sless: run %d of job %s did not finish", plan.RunID.ValueInt64(), name), err.Error())
		} else if j.Phase == domain.JobPhaseFailed {
			diags.AddError(fmt.Sprintf("sless: run %d of job %s failed", j.RunID, name), j.Message)
		}
	}
	m := jobState(plan, j)
	// Apply saves the planned function and event: an adopted job's may
	// differ, and the next refresh brings them in and plans a replacement.
	m.Function, m.EventJSON = plan.Function, plan.EventJSON
	diags.Append(state.Set(ctx, &m)...)
}

// jobState is prior with what j says; event_json keeps its spelling when it
// means the same JSON as the job's event.
func jobState(prior jobModel, j *client.Job) jobModel {
	m := prior
	m.Name, m.Function = types.StringValue(j.Name), types.StringValue(j.Function)
	if !sameJSON(prior.EventJSON.ValueString(), j.Event) {
		m.EventJSON = types.StringValue(string(j.Event))
	}
	if m.WaitTimeoutSec.IsNull() {
		m.WaitTimeoutSec = types.Int64Value(defaultWaitTimeoutSec) // after an import
	}
	m.RunID = types.Int64Value(j.RunID)
	m.Phase = types.StringValue(string(j.Phase))
	m.Message = types.StringValue(j.Message)
	m.StartTime, m.CompletionTime = timeString(j.StartedAt), timeString(j.CompletedAt)
	return m
}

// sameJSON reports whether a and b are the same JSON value.
func sameJSON(a string, b []byte) bool {
	var x, y any
	if json.Unmarshal([]byte(a), &x) != nil || json.Unmarshal(b, &y) != nil {
		return bytes.Equal([]byte(a), b)
	}
	xs, _ := json.Marshal(x)
	ys, _ := json.Marshal(y)
	return bytes.Equal(xs, ys)
}

// timeString is t in RFC 3339, or "" when it is nil.
func timeString(t *time.Time) types.String {
	if t == nil {
		return types.StringValue("")
	}
	return types.StringValue(t.UTC().Format(time.RFC3339))
}

func (r *jobResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var state jobModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	j, err := r.c.GetJob(ctx, state.Name.ValueString())
	if client.IsNotFound(err) {
		resp.State.RemoveResource(ctx)
		return
	}
	if err != nil {
		addAPIError(&resp.Diagnostics, "read job "+state.Name.ValueString(), err)
		return
	}
	m := jobState(state, j)
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

func (r *jobResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var plan, state jobModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	name := plan.Name.ValueString()
	var j *client.Job
	var err error
	if plan.RunID.Equal(state.RunID) {
		j, err = r.c.GetJob(ctx, name) // only wait_timeout_sec changed
		if err == nil {
			m := jobState(plan, j)
			resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
			return
		}
	} else {
		j, err = r.c.SetJobRunID(ctx, name, plan.RunID.ValueInt64())
	}
	if err != nil {
		addAPIError(&resp.Diagnostics, "update job "+name, err, "run_id")
		return
	}
	r.waitAndSave(ctx, plan, j, &resp.State, &resp.Diagnostics)
}

func (r *jobResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	deleteByName(ctx, "job", req, resp, r.c.DeleteJob)
}

// ImportState imports a job by its name.
func (r *jobResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	importByName(ctx, "job", req, resp)
}
