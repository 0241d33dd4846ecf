// Package provider is the Terraform provider of sless on
// terraform-plugin-framework: the provider configuration (endpoint, token),
// the resources sless_function, sless_trigger, sless_job and sless_secret, and the data
// sources sless_function and sless_functions. Every call goes through the
// typed client of the REST API (github.com/slessio/sless/httpapi/client);
// every rule the server checks on input is checked at plan time too, with the
// same code (package domain).
package provider

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/provider"
	"github.com/hashicorp/terraform-plugin-framework/provider/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/slessio/sless/httpapi/client"
)

// Address is the provider's source address.
const Address = "registry.terraform.io/slessio/sless"

// Environment variables read when the provider block leaves a setting out.
const (
	EnvEndpoint = "SLESS_ENDPOINT"
	EnvToken    = "SLESS_TOKEN"
)

// New returns the provider factory for providerserver.
func New(version string) func() provider.Provider {
	return func() provider.Provider { return &slessProvider{version: version} }
}

type slessProvider struct{ version string }

type providerModel struct {
	Endpoint types.String `tfsdk:"endpoint"`
	Token    types.String `tfsdk:"token"`
}

func (p *slessProvider) Metadata(_ context.Context, _ provider.MetadataRequest, resp *provider.MetadataResponse) {
	resp.TypeName = "sless"
	resp.Version = p.version
}

func (p *slessProvider) Schema(_ context.Context, _ provider.SchemaRequest, resp *provider.SchemaResponse) {
	resp.Schema = schema.Schema{
		Description: "Manages functions, triggers, jobs and secrets of a sless namespace: the namespace of the token's user.",
		Attributes: map[string]schema.Attribute{
			"endpoint": schema.StringAttribute{
				Optional:    true,
				Description: "Base URL of the sless API, e.g. http://localhost:8080. Default: the " + EnvEndpoint + " environment variable.",
			},
			"token": schema.StringAttribute{
				Optional:    true,
				Sensitive:   true,
				Description: "Bearer token (JWT) of the user whose namespace is managed. Default: the " + EnvToken + " environment variable.",
			},
		},
	}
}

// Configure makes the client, derives the namespace from the token and
// ensures the namespace once: a rejected token fails here, at plan time.
func (p *slessProvider) Configure(ctx context.Context, req provider.ConfigureRequest, resp *provider.ConfigureResponse) {
	var cfg providerModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &cfg)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if cfg.Endpoint.IsUnknown() || cfg.Token.IsUnknown() {
		return // known at apply; resources refuse to work unconfigured
	}
	endpoint := stringOr(cfg.Endpoint, os.Getenv(EnvEndpoint))
	token := stringOr(cfg.Token, os.Getenv(EnvToken))
	if endpoint == "" {
		resp.Diagnostics.AddAttributeError(path.Root("endpoint"), "Missing sless endpoint",
			"Set endpoint in the provider block or the "+EnvEndpoint+" environment variable, e.g. http://localhost:8080.")
	}
	if token == "" {
		resp.Diagnostics.AddAttributeError(path.Root("token"), "Missing sless token",
			"Set token in the provider block or the "+EnvToken+" environment variable (`sless token --sub <user>` makes one).")
	}
	if resp.Diagnostics.HasError() {
		return
	}
	c, err := client.New(endpoint, token, client.WithUserAgent("terraform-provider-sless/"+p.version))
	if err != nil {
		resp.Diagnostics.AddError("Invalid sless provider configuration", err.Error())
		return
	}
	if _, err := c.EnsureNamespace(ctx); err != nil {
		var apiErr *client.Error
		if errors.As(err, &apiErr) && (apiErr.Status == 401 || apiErr.Status == 403) {
			resp.Diagnostics.AddAttributeError(path.Root("token"), "sless rejected the token",
				fmt.Sprintf("the sless API rejected the token (%d): %s", apiErr.Status, apiErr.Message))
			return
		}
		resp.Diagnostics.AddError("Cannot reach the sless API", fmt.Sprintf("ensure namespace %s at %s: %v", c.Namespace(), endpoint, err))
		return
	}
	resp.ResourceData = c
	resp.DataSourceData = c
}

func (p *slessProvider) Resources(context.Context) []func() resource.Resource {
	return []func() resource.Resource{newFunctionResource, newTriggerResource, newJobResource, newSecretResource}
}

func (p *slessProvider) DataSources(context.Context) []func() datasource.DataSource {
	return []func() datasource.DataSource{newFunctionDataSource, newFunctionsDataSource}
}

// stringOr returns v's value, or def when v is null or empty.
func stringOr(v types.String, def string) string {
	if s := v.ValueString(); s != "" {
		return s
	}
	return def
}
