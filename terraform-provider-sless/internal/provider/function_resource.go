package provider

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/booldefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/int64default"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/httpapi/client"
)

// defaultBuildTimeoutSec is build_timeout_sec when left out (SPEC §8).
const defaultBuildTimeoutSec = 300

var (
	_ resource.ResourceWithConfigure        = (*functionResource)(nil)
	_ resource.ResourceWithImportState      = (*functionResource)(nil)
	_ resource.ResourceWithValidateConfig   = (*functionResource)(nil)
	_ resource.ResourceWithModifyPlan       = (*functionResource)(nil)
	_ resource.ResourceWithConfigValidators = (*functionResource)(nil)
)

func newFunctionResource() resource.Resource { return &functionResource{} }

// functionResource is sless_function: a function, its code (source_dir or
// code_path) and its configuration. Apply uploads the code and waits until
// the version is built and active.
type functionResource struct{ c *client.Client }

type functionModel struct {
	Name            types.String `tfsdk:"name"`
	Runtime         types.String `tfsdk:"runtime"`
	Entrypoint      types.String `tfsdk:"entrypoint"`
	MemoryMB        types.Int64  `tfsdk:"memory_mb"`
	TimeoutSec      types.Int64  `tfsdk:"timeout_sec"`
	MaxConcurrency  types.Int64  `tfsdk:"max_concurrency"`
	RetrySafe       types.Bool   `tfsdk:"retry_safe"`
	Async           types.Object `tfsdk:"async"`
	MinInstances    types.Int64  `tfsdk:"min_instances"`
	MaxInstances    types.Int64  `tfsdk:"max_instances"`
	Concurrency     types.Int64  `tfsdk:"concurrency"`
	EnvVars         types.Map    `tfsdk:"env_vars"`
	Secrets         types.Map    `tfsdk:"secrets"`
	SecretFiles     types.Set    `tfsdk:"secret_files"`
	SecretVersions  types.Map    `tfsdk:"secret_versions"`
	SourceDir       types.String `tfsdk:"source_dir"`
	CodePath        types.String `tfsdk:"code_path"`
	CodeHash        types.String `tfsdk:"code_hash"`
	BuildTimeoutSec types.Int64  `tfsdk:"build_timeout_sec"`
	Version         types.Int64  `tfsdk:"version"`
	ActiveVersion   types.Int64  `tfsdk:"active_version"`
	Phase           types.String `tfsdk:"phase"`
	Message         types.String `tfsdk:"message"`
	CreatedAt       types.String `tfsdk:"created_at"`
	LastBuiltAt     types.String `tfsdk:"last_built_at"`
}

func (r *functionResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_function"
}

func (r *functionResource) Schema(_ context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	computed := func(desc string) schema.StringAttribute {
		return schema.StringAttribute{Computed: true, Description: desc}
	}
	resp.Schema = schema.Schema{
		Description: "A sless function: its code and configuration. Apply uploads the code and waits until the new version is built, active and rolled out (phase Ready; an http trigger's URL serves it); a failed build fails the apply with the build's message.",
		Attributes: map[string]schema.Attribute{
			"name": schema.StringAttribute{
				Required:      true,
				Description:   "Name of the function in the namespace; changing it replaces the function.",
				Validators:    []validator.String{validName("name")},
				PlanModifiers: []planmodifier.String{stringplanmodifier.RequiresReplace()},
			},
			"runtime": schema.StringAttribute{
				Required:    true,
				Description: "Runtime: " + runtimeList() + ".",
				Validators:  []validator.String{validRuntime()},
			},
			"entrypoint": schema.StringAttribute{
				Optional:    true,
				Computed:    true,
				Description: "What the runtime calls: module.function (Python), file.export (Node.js), the package's function (Go); default: " + defaultEntrypoints() + ".",
			},
			"memory_mb": schema.Int64Attribute{
				Optional: true, Computed: true, Default: int64default.StaticInt64(domain.DefaultMemoryMB),
				Description: fmt.Sprintf("Memory limit in MiB (%d–%d, default %d).", domain.MinMemoryMB, domain.MaxMemoryMB, domain.DefaultMemoryMB),
				Validators:  []validator.Int64{between("memory_mb", domain.MinMemoryMB, domain.MaxMemoryMB)},
			},
			"timeout_sec": schema.Int64Attribute{
				Optional: true, Computed: true, Default: int64default.StaticInt64(domain.DefaultTimeoutSec),
				Description: fmt.Sprintf("Time limit of one invocation in seconds (%d–%d, default %d).", domain.MinTimeoutSec, domain.MaxTimeoutSec, domain.DefaultTimeoutSec),
				Validators:  []validator.Int64{between("timeout_sec", domain.MinTimeoutSec, domain.MaxTimeoutSec)},
			},
			"max_concurrency": schema.Int64Attribute{
				Optional: true, Computed: true, Default: int64default.StaticInt64(0),
				Description: fmt.Sprintf("How many requests the function serves at once through its http trigger (429 beyond); 0 (default) is the platform's default, at most %d.", domain.MaxConcurrency),
				Validators:  []validator.Int64{between("max_concurrency", 0, domain.MaxConcurrency)},
			},
			"retry_safe": schema.BoolAttribute{
				Optional: true, Computed: true, Default: booldefault.StaticBool(false),
				Description: "true declares that running the function twice with one event does no harm: a job run interrupted by a server stop or crash is run again; false (default): it fails with \"interrupted\".",
			},
			"async": asyncAttribute(),
			"env_vars": schema.MapAttribute{
				Optional: true, ElementType: types.StringType,
				Description: "Environment variables of the function's processes. Keep credentials out of them (their values stay in the platform's event log, and the apply warns about names that look like one): use secrets.",
			},
			"source_dir": schema.StringAttribute{
				Optional:    true,
				Description: "Directory the provider zips (sorted entries, fixed timestamps and modes: an unchanged directory never shows a diff) and uploads. Exactly one of source_dir and code_path.",
			},
			"code_path": schema.StringAttribute{
				Optional:    true,
				Description: "Path of a zip to upload. Exactly one of source_dir and code_path.",
			},
			"code_hash": schema.StringAttribute{
				Optional: true, Computed: true,
				Description: "What triggers an upload when it changes. Computed from source_dir, or from the zip at code_path, as the server's code digest (sha256 over file names, modes and contents), so code changed outside Terraform shows as a diff; with code_path it may be set, e.g. to filesha256(code_path).",
			},
			"build_timeout_sec": schema.Int64Attribute{
				Optional: true, Computed: true, Default: int64default.StaticInt64(defaultBuildTimeoutSec),
				Description: "How long apply waits for a new version to be built and active (default 300).",
				Validators:  []validator.Int64{between("build_timeout_sec", 1, 24*3600)},
			},
			"version": schema.Int64Attribute{
				Computed: true, Description: "The newest version of the function (each upload or configuration change makes one).",
			},
			"active_version": schema.Int64Attribute{
				Computed: true, Description: "The version triggers and jobs run (0 before the first build).",
			},
			"phase":         computed("Pending, Building, Ready or Failed."),
			"message":       computed("Why the function is in its phase, e.g. the build error of a Failed function."),
			"created_at":    schema.StringAttribute{Computed: true, Description: "When the function was created (RFC 3339).", PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()}},
			"last_built_at": computed("When a version of the function was last built (RFC 3339), empty before the first build."),
		},
	}
	maps.Copy(resp.Schema.Attributes, scaleAttributes())
	maps.Copy(resp.Schema.Attributes, secretAttributes())
}

// defaultEntrypoints lists the default entrypoint of every runtime.
func defaultEntrypoints() string {
	s := ""
	for i, r := range domain.Runtimes {
		if i > 0 {
			s += ", "
		}
		s += domain.DefaultEntrypoint(r) + " (" + string(r) + ")"
	}
	return s
}

func runtimeList() string {
	s := ""
	for i, r := range domain.Runtimes {
		if i > 0 {
			s += ", "
		}
		s += string(r)
	}
	return s
}

func (r *functionResource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	r.c = clientOf(req.ProviderData, &resp.Diagnostics)
}

func (r *functionResource) ConfigValidators(context.Context) []resource.ConfigValidator {
	return []resource.ConfigValidator{exactlyOneOf{"source_dir", "code_path"}}
}

// ValidateConfig checks what needs two attributes: the entrypoint against
// the runtime, code_hash only with code_path, min_instances against
// max_instances, and the environment variables as the server does.
func (r *functionResource) ValidateConfig(ctx context.Context, req resource.ValidateConfigRequest, resp *resource.ValidateConfigResponse) {
	var m functionModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if rt, err := domain.ParseRuntime(m.Runtime.ValueString()); err == nil && !m.Entrypoint.IsNull() && !m.Entrypoint.IsUnknown() {
		if err := domain.ValidateEntrypoint(rt, m.Entrypoint.ValueString()); err != nil {
			resp.Diagnostics.AddAttributeError(path.Root("entrypoint"), "Invalid entrypoint", messageOf(err))
		}
	}
	if !m.SourceDir.IsNull() && !m.CodeHash.IsNull() {
		resp.Diagnostics.AddAttributeError(path.Root("code_hash"), "code_hash is computed from source_dir",
			"Set code_hash only with code_path; with source_dir the provider computes it from the files.")
	}
	validateScale(m, &resp.Diagnostics)
	env, envKnown := stringMap(ctx, m.EnvVars, &resp.Diagnostics)
	if envKnown {
		if err := domain.ValidateEnvVars(env); err != nil {
			resp.Diagnostics.AddAttributeError(path.Root("env_vars"), "Invalid env_vars", messageOf(err))
			return
		}
	}
	secrets, known := stringMap(ctx, m.Secrets, &resp.Diagnostics)
	files, filesKnown := stringSet(ctx, m.SecretFiles, &resp.Diagnostics)
	if envKnown && known && filesKnown {
		validateSecrets(env, secrets, files, &resp.Diagnostics)
	}
}

// ModifyPlan computes code_hash from source_dir or code_path, so that a
// changed file shows in the plan, and the default entrypoint of the runtime.
// On an update it marks what the apply will change as unknown.
func (r *functionResource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if req.Plan.Raw.IsNull() {
		return // destroy
	}
	var plan, cfg functionModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	resp.Diagnostics.Append(req.Config.Get(ctx, &cfg)...)
	if resp.Diagnostics.HasError() {
		return
	}
	switch {
	case !cfg.SourceDir.IsNull() && !cfg.SourceDir.IsUnknown():
		c, err := zipDir(cfg.SourceDir.ValueString())
		if err != nil {
			resp.Diagnostics.AddAttributeError(path.Root("source_dir"), "Cannot zip source_dir", err.Error())
			return
		}
		plan.CodeHash = types.StringValue(c.digest)
	case !cfg.CodePath.IsNull() && !cfg.CodePath.IsUnknown() && cfg.CodeHash.IsNull():
		c, err := readZip(cfg.CodePath.ValueString())
		if err != nil {
			resp.Diagnostics.AddAttributeError(path.Root("code_path"), "Cannot read code_path", err.Error())
			return
		}
		plan.CodeHash = types.StringValue(c.digest)
	}
	if cfg.Entrypoint.IsNull() {
		if rt, err := domain.ParseRuntime(plan.Runtime.ValueString()); err == nil {
			plan.Entrypoint = types.StringValue(domain.DefaultEntrypoint(rt))
		}
	}
	if !req.State.Raw.IsNull() {
		var state functionModel
		resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
		if resp.Diagnostics.HasError() {
			return
		}
		if functionChanges(state, plan) {
			for _, p := range []*types.Int64{&plan.Version, &plan.ActiveVersion} {
				*p = types.Int64Unknown()
			}
			plan.Phase, plan.Message, plan.LastBuiltAt = types.StringUnknown(), types.StringUnknown(), types.StringUnknown()
			plan.SecretVersions = types.MapUnknown(types.Int64Type)
		} else {
			// Only a setting of the provider changes (source_dir named
			// differently, build_timeout_sec): the function stays as it is.
			plan.Version, plan.ActiveVersion = state.Version, state.ActiveVersion
			plan.Phase, plan.Message, plan.LastBuiltAt = state.Phase, state.Message, state.LastBuiltAt
			plan.SecretVersions = state.SecretVersions
		}
	}
	resp.Diagnostics.Append(resp.Plan.Set(ctx, &plan)...)
}

// functionChanges reports whether applying plan over state changes the
// function on the server: its configuration or its code.
func functionChanges(state, plan functionModel) bool {
	return !state.Runtime.Equal(plan.Runtime) || !state.Entrypoint.Equal(plan.Entrypoint) ||
		!state.MemoryMB.Equal(plan.MemoryMB) || !state.TimeoutSec.Equal(plan.TimeoutSec) ||
		!state.MaxConcurrency.Equal(plan.MaxConcurrency) || !state.RetrySafe.Equal(plan.RetrySafe) ||
		!state.Async.Equal(plan.Async) || !state.MinInstances.Equal(plan.MinInstances) || !state.MaxInstances.Equal(plan.MaxInstances) ||
		!state.Concurrency.Equal(plan.Concurrency) || !sameEnv(state.EnvVars, plan.EnvVars) || !state.CodeHash.Equal(plan.CodeHash) ||
		!sameEnv(state.Secrets, plan.Secrets) || !sameFiles(state.SecretFiles, plan.SecretFiles)
}

// sameEnv compares env_vars (and secrets) with null and empty equal.
func sameEnv(a, b types.Map) bool {
	if len(a.Elements()) == 0 && len(b.Elements()) == 0 && !a.IsUnknown() && !b.IsUnknown() {
		return true
	}
	return a.Equal(b)
}

func (r *functionResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var plan functionModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	c, ok := r.code(plan, &resp.Diagnostics)
	if !ok {
		return
	}
	env, _ := stringMap(ctx, plan.EnvVars, &resp.Diagnostics)
	secrets, _ := stringMap(ctx, plan.Secrets, &resp.Diagnostics)
	files, _ := stringSet(ctx, plan.SecretFiles, &resp.Diagnostics)
	name := plan.Name.ValueString()
	fn, err := r.c.CreateFunction(ctx, client.CreateFunctionRequest{
		Name: name, Runtime: plan.Runtime.ValueString(), Entrypoint: plan.Entrypoint.ValueString(),
		MemoryMB: int(plan.MemoryMB.ValueInt64()), TimeoutSec: int(plan.TimeoutSec.ValueInt64()), EnvVars: env,
		MaxConcurrency: int(plan.MaxConcurrency.ValueInt64()), RetrySafe: plan.RetrySafe.ValueBool(),
		MinInstances: int(plan.MinInstances.ValueInt64()), MaxInstances: int(plan.MaxInstances.ValueInt64()), Concurrency: int(plan.Concurrency.ValueInt64()),
		Async:   asyncPatchOf(ctx, plan.Async, &resp.Diagnostics),
		Secrets: secrets, SecretFiles: files,
	})
	if err != nil {
		addAPIError(&resp.Diagnostics, "create function "+name, err, functionFields...)
		return
	}
	addWarnings(&resp.Diagnostics, name, fn.Warnings)
	up, err := r.c.Upload(ctx, name, c.zip)
	if err != nil {
		addAPIError(&resp.Diagnostics, "upload the code of "+name, err)
		r.saveAfterFailure(ctx, plan, &resp.State, &resp.Diagnostics)
		return
	}
	r.waitAndSave(ctx, plan, up.Version.Version, &resp.State, &resp.Diagnostics)
}

// functionFields are the request fields of a function that are attributes.
var functionFields = slices.Concat([]string{"name", "runtime", "entrypoint", "memory_mb", "timeout_sec", "env_vars", "max_concurrency", "retry_safe",
	"secrets", "secret_files"},
	asyncFields, scaleFields)

// code returns the zip to upload for m.
func (r *functionResource) code(m functionModel, diags *diag.Diagnostics) (code, bool) {
	var c code
	var err error
	if !m.SourceDir.IsNull() {
		c, err = zipDir(m.SourceDir.ValueString())
	} else {
		c, err = readZip(m.CodePath.ValueString())
	}
	if err != nil {
		diags.AddError("Cannot read the function's code", err.Error())
		return code{}, false
	}
	return c, true
}

// waitAndSave waits until version v is built and active, then saves the
// function's state; a failed build or a timeout is an error, and the state
// is saved all the same (Terraform taints a created resource).
func (r *functionResource) waitAndSave(ctx context.Context, plan functionModel, v int, state stateSetter, diags *diag.Diagnostics) {
	name := plan.Name.ValueString()
	ctx2, cancel := context.WithTimeoutCause(ctx, time.Duration(plan.BuildTimeoutSec.ValueInt64())*time.Second,
		fmt.Errorf("gave up waiting after build_timeout_sec = %d", plan.BuildTimeoutSec.ValueInt64()))
	defer cancel()
	_, err := r.c.WaitServing(ctx2, name, v, pollInterval, nil)
	if err != nil {
		diags.AddError(fmt.Sprintf("sless: function %s is not ready", name), err.Error())
		r.saveAfterFailure(ctx, plan, state, diags)
		return
	}
	m, found, err := r.read(ctx, plan)
	if err != nil || !found {
		diags.AddError("sless: read function "+name, fmt.Sprintf("after apply: %v (found %t)", err, found))
		return
	}
	diags.Append(state.Set(ctx, &m)...)
}

// saveAfterFailure saves what the server has after a failed apply, so the
// function is not forgotten (a created one is tainted and replaced next).
func (r *functionResource) saveAfterFailure(ctx context.Context, plan functionModel, state stateSetter, diags *diag.Diagnostics) {
	m, found, err := r.read(ctx, plan)
	if err != nil || !found {
		return
	}
	diags.Append(state.Set(ctx, &m)...)
}

// stateSetter is the Set of tfsdk.State.
type stateSetter interface {
	Set(ctx context.Context, val any) diag.Diagnostics
}

func (r *functionResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var state functionModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	m, found, err := r.read(ctx, state)
	if err != nil {
		addAPIError(&resp.Diagnostics, "read function "+state.Name.ValueString(), err)
		return
	}
	if !found {
		resp.State.RemoveResource(ctx) // deleted outside Terraform: planned for re-creation
		return
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

// read returns prior with what the server says of the function; found is
// false when it does not exist.
func (r *functionResource) read(ctx context.Context, prior functionModel) (functionModel, bool, error) {
	name := prior.Name.ValueString()
	fn, err := r.c.GetFunction(ctx, name)
	if client.IsNotFound(err) {
		return prior, false, nil
	}
	if err != nil {
		return prior, false, err
	}
	versions, err := r.c.ListVersions(ctx, name)
	if err != nil {
		return prior, false, err
	}
	m := prior
	m.Name = types.StringValue(fn.Name)
	m.Runtime = types.StringValue(fn.Runtime)
	m.Entrypoint = types.StringValue(fn.Entrypoint)
	m.MemoryMB = types.Int64Value(int64(fn.MemoryMB))
	m.TimeoutSec = types.Int64Value(int64(fn.TimeoutSec))
	m.MaxConcurrency = types.Int64Value(int64(fn.MaxConcurrency))
	m.RetrySafe = types.BoolValue(fn.RetrySafe)
	m.Async = asyncObject(fn.Async)
	m.MinInstances = types.Int64Value(int64(fn.MinInstances))
	m.MaxInstances = types.Int64Value(int64(fn.MaxInstances))
	m.Concurrency = types.Int64Value(int64(fn.Concurrency))
	if len(fn.EnvVars) > 0 || !prior.EnvVars.IsNull() {
		m.EnvVars = stringMapValue(fn.EnvVars)
	}
	if len(fn.Secrets) > 0 || !prior.Secrets.IsNull() {
		m.Secrets = stringMapValue(fn.Secrets)
	}
	if len(fn.SecretFiles) > 0 || !prior.SecretFiles.IsNull() {
		m.SecretFiles = stringSetValue(fn.SecretFiles)
	}
	m.SecretVersions = secretVersions(fn.SecretVersions)
	if m.BuildTimeoutSec.IsNull() {
		m.BuildTimeoutSec = types.Int64Value(defaultBuildTimeoutSec) // after an import
	}
	m.ActiveVersion = types.Int64Value(int64(fn.ActiveVersion))
	m.Phase = types.StringValue(string(fn.Phase))
	m.Message = types.StringValue(fn.Message)
	m.CreatedAt = types.StringValue(fn.CreatedAt.UTC().Format(time.RFC3339))
	m.LastBuiltAt = types.StringValue("")
	if fn.LastBuiltAt != nil {
		m.LastBuiltAt = types.StringValue(fn.LastBuiltAt.UTC().Format(time.RFC3339))
	}
	m.Version = types.Int64Value(0)
	if len(versions.Versions) > 0 {
		m.Version = types.Int64Value(int64(versions.Versions[0].Version))
	}
	// The digest of the code that runs is code_hash, unless the user set
	// code_hash to something of their own: code uploaded or rolled back
	// outside Terraform then shows as a diff.
	for _, v := range versions.Versions {
		if v.Version == fn.ActiveVersion && (prior.CodeHash.IsNull() || isDigest(prior.CodeHash.ValueString())) {
			m.CodeHash = types.StringValue(v.Digest)
		}
	}
	if m.CodeHash.IsUnknown() {
		m.CodeHash = types.StringNull()
	}
	return m, true, nil
}

// isDigest reports whether s has the form of the server's code digest.
func isDigest(s string) bool { return len(s) == len("sha256:")+64 && s[:7] == "sha256:" }

func (r *functionResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var plan, state functionModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	name := plan.Name.ValueString()
	if !functionChanges(state, plan) {
		m, found, err := r.read(ctx, plan)
		if err != nil || !found {
			addAPIError(&resp.Diagnostics, "read function "+name, fmt.Errorf("%v (found %t)", err, found))
			return
		}
		resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
		return
	}
	env, _ := stringMap(ctx, plan.EnvVars, &resp.Diagnostics)
	if env == nil {
		env = map[string]string{} // env_vars removed: clear them
	}
	secrets, _ := stringMap(ctx, plan.Secrets, &resp.Diagnostics)
	if secrets == nil {
		secrets = map[string]string{}
	}
	files, _ := stringSet(ctx, plan.SecretFiles, &resp.Diagnostics)
	if files == nil {
		files = []string{}
	}
	before, err := r.c.ListVersions(ctx, name)
	if err != nil {
		addAPIError(&resp.Diagnostics, "read the versions of "+name, err)
		return
	}
	fn, err := r.c.UpdateFunction(ctx, name, client.UpdateFunctionRequest{
		Runtime: client.Ptr(plan.Runtime.ValueString()), Entrypoint: client.Ptr(plan.Entrypoint.ValueString()),
		MemoryMB: client.Ptr(int(plan.MemoryMB.ValueInt64())), TimeoutSec: client.Ptr(int(plan.TimeoutSec.ValueInt64())),
		EnvVars: &env, MaxConcurrency: client.Ptr(int(plan.MaxConcurrency.ValueInt64())), RetrySafe: client.Ptr(plan.RetrySafe.ValueBool()),
		MinInstances: client.Ptr(int(plan.MinInstances.ValueInt64())), MaxInstances: client.Ptr(int(plan.MaxInstances.ValueInt64())),
		Concurrency: client.Ptr(int(plan.Concurrency.ValueInt64())),
		Async:       asyncPatchOf(ctx, plan.Async, &resp.Diagnostics), // removed from the configuration: the defaults, planned
		Secrets:     &secrets, SecretFiles: &files,
	})
	if err != nil {
		addAPIError(&resp.Diagnostics, "update function "+name, err, functionFields...)
		return
	}
	addWarnings(&resp.Diagnostics, name, fn.Warnings)
	target := newest(before)
	if !state.CodeHash.Equal(plan.CodeHash) || !state.Runtime.Equal(plan.Runtime) {
		c, ok := r.code(plan, &resp.Diagnostics)
		if !ok {
			return
		}
		up, err := r.c.Upload(ctx, name, c.zip)
		if err != nil {
			addAPIError(&resp.Diagnostics, "upload the code of "+name, err)
			return
		}
		target = up.Version.Version
	} else if after, err := r.c.ListVersions(ctx, name); err != nil {
		addAPIError(&resp.Diagnostics, "read the versions of "+name, err)
		return
	} else {
		target = newest(after) // a configuration change makes a version when code exists
	}
	if target == 0 {
		m, _, err := r.read(ctx, plan)
		if err != nil {
			addAPIError(&resp.Diagnostics, "read function "+name, err)
			return
		}
		resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
		return
	}
	r.waitAndSave(ctx, plan, target, &resp.State, &resp.Diagnostics)
}

// newest is the number of the newest version, 0 when there is none.
func newest(l *client.VersionList) int {
	if len(l.Versions) == 0 {
		return 0
	}
	return l.Versions[0].Version
}

func (r *functionResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	deleteByName(ctx, "function", req, resp, r.c.DeleteFunction)
}

// ImportState imports a function by its name.
func (r *functionResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	importByName(ctx, "function", req, resp)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("build_timeout_sec"), int64(defaultBuildTimeoutSec))...)
}
