package provider

import (
	"errors"
	"fmt"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	dsschema "github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/slessio/sless/domain"
)

// The namespace secrets a function uses: secrets (env var → secret) and
// secret_files, optional like env_vars (null and empty alike), and the
// computed secret_versions its active configuration pins. A new value of a
// secret makes a new version of every function using it on the server's
// side; the function's state follows at the next refresh.

// secretAttributes are the resource's secret attributes.
func secretAttributes() map[string]schema.Attribute {
	return map[string]schema.Attribute{
		"secrets": schema.MapAttribute{
			Optional: true, ElementType: types.StringType,
			Description: "Environment variables taking the value of a namespace secret: variable name → secret name (sless_secret's name).",
		},
		"secret_files": schema.SetAttribute{
			Optional: true, ElementType: types.StringType,
			Description: "Namespace secrets the function reads as files, each at " + domain.SecretFilesDir + "/<secret name>.",
		},
		"secret_versions": schema.MapAttribute{
			Computed: true, ElementType: types.Int64Type,
			Description: "Secret name → the version of its value the active configuration runs; a new value of a secret makes a new version of the function.",
		},
	}
}

// secretInfoAttributes are the data sources' secret attributes.
func secretInfoAttributes() map[string]dsschema.Attribute {
	return map[string]dsschema.Attribute{
		"secrets": dsschema.MapAttribute{Computed: true, ElementType: types.StringType,
			Description: "Environment variables taking the value of a namespace secret: variable name → secret name."},
		"secret_files": dsschema.SetAttribute{Computed: true, ElementType: types.StringType,
			Description: "Namespace secrets the function reads as files, at " + domain.SecretFilesDir + "/<secret name>."},
		"secret_versions": dsschema.MapAttribute{Computed: true, ElementType: types.Int64Type,
			Description: "Secret name → the version of its value the active configuration runs."},
	}
}

// validateSecrets checks the secrets a function is given with the domain's
// own rules (variable and secret names, a variable also in env_vars, a
// count over the limit), which FunctionSpec.Config applies; whether the
// secrets exist only the server knows (422 at apply).
func validateSecrets(env, secrets map[string]string, files []string, diags *diag.Diagnostics) {
	_, err := domain.FunctionSpec{Runtime: string(domain.Runtimes[0]), EnvVars: env, Secrets: secrets, SecretFiles: files}.Config()
	var de *domain.Error
	if !errors.As(err, &de) || de.Code != domain.EINVALID {
		return
	}
	p := path.Root("secrets")
	if de.Field == "secret_files" {
		p = path.Root("secret_files")
	} else if env, ok := strings.CutPrefix(de.Field, "secrets."); ok {
		p = p.AtMapKey(env)
	}
	diags.AddAttributeError(p, "Invalid "+p.String(), messageOf(err))
}

// secretVersions is secret_versions of a function's pinned versions.
func secretVersions(pinned map[string]int) types.Map {
	out := make(map[string]attr.Value, len(pinned))
	for k, v := range pinned {
		out[k] = types.Int64Value(int64(v))
	}
	return types.MapValueMust(types.Int64Type, out)
}

// sameFiles compares secret_files with null and empty equal.
func sameFiles(a, b types.Set) bool {
	if len(a.Elements()) == 0 && len(b.Elements()) == 0 && !a.IsUnknown() && !b.IsUnknown() {
		return true
	}
	return a.Equal(b)
}

// addWarnings shows the API's warnings about a function's configuration
// (a credential in a plain env var) as Terraform warnings.
func addWarnings(diags *diag.Diagnostics, name string, warnings []string) {
	for _, w := range warnings {
		diags.AddWarning(fmt.Sprintf("sless: function %s", name), w)
	}
}
