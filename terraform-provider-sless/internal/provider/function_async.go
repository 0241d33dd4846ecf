package provider

import (
	"context"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	dsschema "github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/int64default"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/objectdefault"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-framework/types/basetypes"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/httpapi/client"
)

// The async attribute of a function: how its asynchronous invocations are
// delivered. It is an optional, computed single nested attribute whose
// default is the server's defaults, so that leaving it out, or removing it
// from the configuration, plans the defaults (sent to the server, which
// then stores none of its own) and never a perpetual diff.

// asyncModel is the async attribute's object.
type asyncModel struct {
	MaxRetries     types.Int64 `tfsdk:"max_retries"`
	MaxEventAgeSec types.Int64 `tfsdk:"max_event_age_sec"`
	MaxConcurrency types.Int64 `tfsdk:"max_concurrency"`
}

// asyncAttrTypes are the types of the async object's attributes.
var asyncAttrTypes = map[string]attr.Type{
	"max_retries":       types.Int64Type,
	"max_event_age_sec": types.Int64Type,
	"max_concurrency":   types.Int64Type,
}

// asyncObject is c as the async attribute's value.
func asyncObject(c client.AsyncConfig) types.Object {
	return types.ObjectValueMust(asyncAttrTypes, map[string]attr.Value{
		"max_retries":       types.Int64Value(int64(c.MaxRetries)),
		"max_event_age_sec": types.Int64Value(int64(c.MaxEventAgeSec)),
		"max_concurrency":   types.Int64Value(int64(c.MaxConcurrency)),
	})
}

// defaultAsync is the async configuration of a function that sets none.
func defaultAsync() types.Object {
	d := domain.DefaultAsyncConfig()
	return asyncObject(client.AsyncConfig{MaxRetries: d.MaxRetries, MaxEventAgeSec: d.MaxEventAgeSec, MaxConcurrency: d.MaxConcurrency})
}

// asyncPatchOf is the planned async object as a request's whole async
// configuration; a null or unknown object (not planned: the attribute has
// a default) sends none, which keeps the server's.
func asyncPatchOf(ctx context.Context, o types.Object, diags *diag.Diagnostics) *client.AsyncPatch {
	if o.IsNull() || o.IsUnknown() {
		return nil
	}
	var m asyncModel
	diags.Append(o.As(ctx, &m, basetypes.ObjectAsOptions{})...)
	p := &client.AsyncPatch{}
	for _, f := range []struct {
		v   types.Int64
		dst **int
	}{{m.MaxRetries, &p.MaxRetries}, {m.MaxEventAgeSec, &p.MaxEventAgeSec}, {m.MaxConcurrency, &p.MaxConcurrency}} {
		if !f.v.IsNull() && !f.v.IsUnknown() {
			*f.dst = client.Ptr(int(f.v.ValueInt64()))
		}
	}
	return p
}

// asyncFields are the API's fields of the async configuration, which
// addAPIError shows on the nested attributes of the same names.
var asyncFields = []string{"async.max_retries", "async.max_event_age_sec", "async.max_concurrency"}

// asyncAttribute is the resource's async attribute.
func asyncAttribute() schema.SingleNestedAttribute {
	d := domain.DefaultAsyncConfig()
	return schema.SingleNestedAttribute{
		Optional: true, Computed: true, Default: objectdefault.StaticValue(defaultAsync()),
		Description: fmt.Sprintf("How asynchronous invocations of the function (X-Sless-Invocation-Type: async, /async-fn/, invoke?async=true) are delivered, "+
			"written as an attribute: async = { max_retries = 5 }. Left out, or removed from the configuration, it is the platform's defaults (max_retries %d, max_event_age_sec %d, max_concurrency %d), which the state shows; "+
			"a field left out of it takes its default. It belongs to the function, not to a version: a change makes no new version and a rollback keeps it.",
			d.MaxRetries, d.MaxEventAgeSec, d.MaxConcurrency),
		Attributes: map[string]schema.Attribute{
			"max_retries": schema.Int64Attribute{
				Optional: true, Computed: true, Default: int64default.StaticInt64(domain.DefaultAsyncMaxRetries),
				Description: fmt.Sprintf("Attempts after the first for a 429, a 5xx, a timeout or a connection error (0–%d, default %d); then the invocation is a dead letter.",
					domain.MaxAsyncMaxRetries, domain.DefaultAsyncMaxRetries),
				Validators: []validator.Int64{between("async.max_retries", 0, domain.MaxAsyncMaxRetries)},
			},
			"max_event_age_sec": schema.Int64Attribute{
				Optional: true, Computed: true, Default: int64default.StaticInt64(domain.DefaultAsyncMaxEventAgeSec),
				Description: fmt.Sprintf("Seconds after which a queued invocation is given up to the dead letters (%d–%d, default %d).",
					domain.MinAsyncMaxEventAgeSec, domain.MaxAsyncMaxEventAgeSec, domain.DefaultAsyncMaxEventAgeSec),
				Validators: []validator.Int64{between("async.max_event_age_sec", domain.MinAsyncMaxEventAgeSec, domain.MaxAsyncMaxEventAgeSec)},
			},
			"max_concurrency": schema.Int64Attribute{
				Optional: true, Computed: true, Default: int64default.StaticInt64(int64(d.MaxConcurrency)),
				Description: fmt.Sprintf("Asynchronous deliveries at once; 0 (default) sets no bound of their own (the function's max_concurrency still applies: beyond it a 429, which is retried), at most %d.",
					domain.MaxConcurrency),
				Validators: []validator.Int64{between("async.max_concurrency", 0, domain.MaxConcurrency)},
			},
		},
	}
}

// asyncInfoAttribute is the data sources' async attribute.
func asyncInfoAttribute() dsschema.SingleNestedAttribute {
	i := func(desc string) dsschema.Int64Attribute {
		return dsschema.Int64Attribute{Computed: true, Description: desc}
	}
	return dsschema.SingleNestedAttribute{
		Computed:    true,
		Description: "How asynchronous invocations of the function are delivered.",
		Attributes: map[string]dsschema.Attribute{
			"max_retries":       i("Attempts after the first for a 429, a 5xx, a timeout or a connection error."),
			"max_event_age_sec": i("Seconds after which a queued invocation is given up to the dead letters."),
			"max_concurrency":   i("Asynchronous deliveries at once; 0: no bound of their own."),
		},
	}
}
