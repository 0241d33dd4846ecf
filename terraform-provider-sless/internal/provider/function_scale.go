package provider

import (
	"errors"
	"fmt"
	"strings"

	dsschema "github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/int64default"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/slessio/sless/domain"
)

// How a function scales: min_instances, max_instances and concurrency,
// optional and computed attributes whose default, 0, takes the platform's
// or the runtime's, so that removing one from the configuration plans it
// back to 0. Like async they belong to the function, not to a version.

// scaleFields are the API's fields of a function's scaling, which are the
// attributes' names.
var scaleFields = []string{"min_instances", "max_instances", "concurrency"}

// belongsToFunction ends the description of a setting of the function's own.
const belongsToFunction = " It belongs to the function, not to a version: a change makes no new version and a rollback keeps it."

// scaleAttributes are the resource's scaling attributes.
func scaleAttributes() map[string]schema.Attribute {
	return map[string]schema.Attribute{
		"min_instances": schema.Int64Attribute{
			Optional: true, Computed: true, Default: int64default.StaticInt64(0),
			Description: fmt.Sprintf("Instances kept running, never idled out (0–%d); 0 (default) scales the function to zero when idle. "+
				"At most max_instances when that is set.", domain.MaxInstances) + belongsToFunction,
			Validators: []validator.Int64{between("min_instances", 0, domain.MaxInstances)},
		},
		"max_instances": schema.Int64Attribute{
			Optional: true, Computed: true, Default: int64default.StaticInt64(0),
			Description: fmt.Sprintf("Most instances at once (0–%d); 0 (default) is the platform's default (SLESS_FN_DEFAULT_MAX_INSTANCES).",
				domain.MaxInstances) + belongsToFunction,
			Validators: []validator.Int64{between("max_instances", 0, domain.MaxInstances)},
		},
		"concurrency": schema.Int64Attribute{
			Optional: true, Computed: true, Default: int64default.StaticInt64(0),
			Description: fmt.Sprintf("Requests one instance takes at once (0–%d); 0 (default) is the runtime's default: %s.",
				domain.MaxInstanceConcurrency, runtimeConcurrencies()) + belongsToFunction,
			Validators: []validator.Int64{between("concurrency", 0, domain.MaxInstanceConcurrency)},
		},
	}
}

// scaleInfoAttributes are the data sources' scaling attributes.
func scaleInfoAttributes() map[string]dsschema.Attribute {
	i := func(desc string) dsschema.Int64Attribute {
		return dsschema.Int64Attribute{Computed: true, Description: desc}
	}
	return map[string]dsschema.Attribute{
		"min_instances": i("Instances kept running, never idled out; 0: scale to zero when idle."),
		"max_instances": i("Most instances at once; 0: the platform's default."),
		"concurrency":   i("Requests one instance takes at once; 0: the runtime's default (" + runtimeConcurrencies() + ")."),
	}
}

// runtimeConcurrencies lists the default concurrency of every runtime:
// "1 for python3.11, 1 for nodejs20, 16 for go1.23".
func runtimeConcurrencies() string {
	var s []string
	for _, r := range domain.Runtimes {
		s = append(s, fmt.Sprintf("%d for %s", domain.DefaultConcurrency(r), r))
	}
	return strings.Join(s, ", ")
}

// validateScale checks what needs two scaling attributes (min_instances
// against max_instances) with the domain's own rules, once each is known
// and within the range its validator checks.
func validateScale(m functionModel, diags *diag.Diagnostics) {
	var s domain.ScaleConfig
	for _, f := range []struct {
		v   types.Int64
		dst *int
	}{{m.MinInstances, &s.MinInstances}, {m.MaxInstances, &s.MaxInstances}} {
		if f.v.IsUnknown() {
			return
		}
		v := f.v.ValueInt64() // null: the default, 0
		if v < 0 || v > domain.MaxInstances {
			return
		}
		*f.dst = int(v)
	}
	// FunctionSpec.Config applies the domain's rules; every other field of
	// the spec takes its valid default.
	_, err := domain.FunctionSpec{Runtime: string(domain.Runtimes[0]), Scale: s}.Config()
	var de *domain.Error
	if errors.As(err, &de) {
		diags.AddAttributeError(path.Root(de.Field), "Invalid "+de.Field, messageOf(err))
	}
}
