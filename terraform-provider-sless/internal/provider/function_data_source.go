package provider

import (
	"context"
	"maps"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/slessio/sless/httpapi/client"
)

var (
	_ datasource.DataSourceWithConfigure = (*functionDataSource)(nil)
	_ datasource.DataSourceWithConfigure = (*functionsDataSource)(nil)
)

// functionInfo is what the data sources say of one function.
type functionInfo struct {
	Name           types.String `tfsdk:"name"`
	Runtime        types.String `tfsdk:"runtime"`
	Entrypoint     types.String `tfsdk:"entrypoint"`
	MemoryMB       types.Int64  `tfsdk:"memory_mb"`
	TimeoutSec     types.Int64  `tfsdk:"timeout_sec"`
	EnvVars        types.Map    `tfsdk:"env_vars"`
	Secrets        types.Map    `tfsdk:"secrets"`
	SecretFiles    types.Set    `tfsdk:"secret_files"`
	SecretVersions types.Map    `tfsdk:"secret_versions"`
	Async          types.Object `tfsdk:"async"`
	MinInstances   types.Int64  `tfsdk:"min_instances"`
	MaxInstances   types.Int64  `tfsdk:"max_instances"`
	Concurrency    types.Int64  `tfsdk:"concurrency"`
	ActiveVersion  types.Int64  `tfsdk:"active_version"`
	Phase          types.String `tfsdk:"phase"`
	Message        types.String `tfsdk:"message"`
	CreatedAt      types.String `tfsdk:"created_at"`
	LastBuiltAt    types.String `tfsdk:"last_built_at"`
}

// functionInfoAttributes is the schema of functionInfo; name is set apart
// because the single data source takes it as its argument.
func functionInfoAttributes(name schema.StringAttribute) map[string]schema.Attribute {
	s := func(desc string) schema.StringAttribute {
		return schema.StringAttribute{Computed: true, Description: desc}
	}
	i := func(desc string) schema.Int64Attribute {
		return schema.Int64Attribute{Computed: true, Description: desc}
	}
	attrs := map[string]schema.Attribute{
		"name":           name,
		"runtime":        s("Runtime of the function."),
		"entrypoint":     s("Entrypoint of the function."),
		"memory_mb":      i("Memory limit in MiB."),
		"timeout_sec":    i("Time limit of one invocation in seconds."),
		"env_vars":       schema.MapAttribute{Computed: true, ElementType: types.StringType, Description: "Environment variables."},
		"async":          asyncInfoAttribute(),
		"active_version": i("The version triggers and jobs run (0 before the first build)."),
		"phase":          s("Pending, Building, Ready or Failed."),
		"message":        s("Why the function is in its phase."),
		"created_at":     s("When the function was created (RFC 3339)."),
		"last_built_at":  s("When a version was last built (RFC 3339), empty before the first build."),
	}
	maps.Copy(attrs, scaleInfoAttributes())
	maps.Copy(attrs, secretInfoAttributes())
	return attrs
}

func infoOf(fn client.Function) functionInfo {
	return functionInfo{
		Name: types.StringValue(fn.Name), Runtime: types.StringValue(fn.Runtime), Entrypoint: types.StringValue(fn.Entrypoint),
		MemoryMB: types.Int64Value(int64(fn.MemoryMB)), TimeoutSec: types.Int64Value(int64(fn.TimeoutSec)),
		EnvVars: stringMapValue(fn.EnvVars), Async: asyncObject(fn.Async),
		Secrets: stringMapValue(fn.Secrets), SecretFiles: stringSetValue(fn.SecretFiles), SecretVersions: secretVersions(fn.SecretVersions),
		MinInstances: types.Int64Value(int64(fn.MinInstances)), MaxInstances: types.Int64Value(int64(fn.MaxInstances)),
		Concurrency:   types.Int64Value(int64(fn.Concurrency)),
		ActiveVersion: types.Int64Value(int64(fn.ActiveVersion)), Phase: types.StringValue(string(fn.Phase)),
		Message: types.StringValue(fn.Message), CreatedAt: types.StringValue(fn.CreatedAt.UTC().Format(time.RFC3339)),
		LastBuiltAt: timeString(fn.LastBuiltAt),
	}
}

func newFunctionDataSource() datasource.DataSource { return &functionDataSource{} }

// functionDataSource is data.sless_function: one function by name.
type functionDataSource struct{ c *client.Client }

func (d *functionDataSource) Metadata(_ context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_function"
}

func (d *functionDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	resp.Schema = schema.Schema{
		Description: "A function of the namespace, by name.",
		Attributes: functionInfoAttributes(schema.StringAttribute{Required: true, Description: "Name of the function.",
			Validators: []validator.String{validName("name")}}),
	}
}

func (d *functionDataSource) Configure(_ context.Context, req datasource.ConfigureRequest, resp *datasource.ConfigureResponse) {
	d.c = clientOf(req.ProviderData, &resp.Diagnostics)
}

func (d *functionDataSource) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	var name types.String
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, pathName, &name)...)
	if resp.Diagnostics.HasError() {
		return
	}
	fn, err := d.c.GetFunction(ctx, name.ValueString())
	if err != nil {
		addAPIError(&resp.Diagnostics, "read function "+name.ValueString(), err)
		return
	}
	info := infoOf(*fn)
	resp.Diagnostics.Append(resp.State.Set(ctx, &info)...)
}

func newFunctionsDataSource() datasource.DataSource { return &functionsDataSource{} }

// functionsDataSource is data.sless_functions: every function of the
// namespace, sorted by name.
type functionsDataSource struct{ c *client.Client }

type functionsModel struct {
	Names     types.List     `tfsdk:"names"`
	Functions []functionInfo `tfsdk:"functions"`
}

func (d *functionsDataSource) Metadata(_ context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_functions"
}

func (d *functionsDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	resp.Schema = schema.Schema{
		Description: "Every function of the namespace, sorted by name.",
		Attributes: map[string]schema.Attribute{
			"names": schema.ListAttribute{Computed: true, ElementType: types.StringType, Description: "The functions' names."},
			"functions": schema.ListNestedAttribute{Computed: true, Description: "The functions.",
				NestedObject: schema.NestedAttributeObject{Attributes: functionInfoAttributes(schema.StringAttribute{Computed: true, Description: "Name of the function."})}},
		},
	}
}

func (d *functionsDataSource) Configure(_ context.Context, req datasource.ConfigureRequest, resp *datasource.ConfigureResponse) {
	d.c = clientOf(req.ProviderData, &resp.Diagnostics)
}

func (d *functionsDataSource) Read(ctx context.Context, _ datasource.ReadRequest, resp *datasource.ReadResponse) {
	fns, err := d.c.ListFunctions(ctx)
	if err != nil {
		addAPIError(&resp.Diagnostics, "list functions", err)
		return
	}
	m := functionsModel{Functions: []functionInfo{}}
	names := make([]attr.Value, 0, len(fns))
	for _, fn := range sortedByName(fns) {
		m.Functions = append(m.Functions, infoOf(fn))
		names = append(names, types.StringValue(fn.Name))
	}
	m.Names = types.ListValueMust(types.StringType, names)
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}
