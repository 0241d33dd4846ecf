package provider_test

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/datasource"
	dsschema "github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	fwprovider "github.com/hashicorp/terraform-plugin-framework/provider"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	rsschema "github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/slessio/sless/terraform-provider-sless/internal/provider"
)

// updateDocs rewrites docs/ from the schema: go test -run TestDocs -update-docs
var updateDocs = flag.Bool("update-docs", false, "rewrite docs/ from the provider's schema")

// moduleRoot is the provider module's directory, from this package's.
const moduleRoot = "../.."

// attribute is what the docs say of one attribute; nested holds the
// attributes of a single nested attribute.
type attribute struct {
	name, typ, description   string
	required, optional, comp bool
	sensitive                bool
	nested                   []attribute
}

// TestDocs checks that docs/ (the Terraform Registry's layout, as
// tfplugindocs writes it) is what the provider's schema and examples/ make.
func TestDocs(t *testing.T) {
	ctx := context.Background()
	p := provider.New("docs")()
	pages := map[string]string{}

	var ps fwprovider.SchemaResponse
	p.Schema(ctx, fwprovider.SchemaRequest{}, &ps)
	var pattrs []attribute
	for name, a := range ps.Schema.Attributes {
		pattrs = append(pattrs, attributeOf(name, a))
	}
	pages["index.md"] = page("sless Provider", "", ps.Schema.Description, "provider/provider.tf", "", pattrs)

	for _, f := range p.Resources(ctx) {
		r := f()
		var md resource.MetadataResponse
		r.Metadata(ctx, resource.MetadataRequest{ProviderTypeName: "sless"}, &md)
		var sr resource.SchemaResponse
		r.Schema(ctx, resource.SchemaRequest{}, &sr)
		var attrs []attribute
		for name, a := range sr.Schema.Attributes {
			attrs = append(attrs, attributeOf(name, a))
		}
		pages["resources/"+strings.TrimPrefix(md.TypeName, "sless_")+".md"] = page(md.TypeName, "Resource", sr.Schema.Description,
			"resources/"+md.TypeName+"/resource.tf", "resources/"+md.TypeName+"/import.sh", attrs)
	}
	for _, f := range p.DataSources(ctx) {
		d := f()
		var md datasource.MetadataResponse
		d.Metadata(ctx, datasource.MetadataRequest{ProviderTypeName: "sless"}, &md)
		var sr datasource.SchemaResponse
		d.Schema(ctx, datasource.SchemaRequest{}, &sr)
		var attrs []attribute
		for name, a := range sr.Schema.Attributes {
			at := attributeOf(name, a)
			if _, nested := a.(dsschema.ListNestedAttribute); nested {
				at.typ = "List of Object, each with the attributes of data source sless_function"
			}
			attrs = append(attrs, at)
		}
		pages["data-sources/"+strings.TrimPrefix(md.TypeName, "sless_")+".md"] = page(md.TypeName, "Data Source", sr.Schema.Description,
			"data-sources/"+md.TypeName+"/data-source.tf", "", attrs)
	}

	for name, want := range pages {
		path := filepath.Join(moduleRoot, "docs", name)
		if *updateDocs {
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(path)
		if err != nil || !bytes.Equal(got, []byte(want)) {
			t.Errorf("docs/%s is not what the schema makes (%v): run `go test ./internal/provider -run TestDocs -update-docs` in terraform-provider-sless", name, err)
		}
	}
}

// schemaAttribute is what the framework's attributes of every kind of
// schema (provider, resource, data source) tell.
type schemaAttribute interface {
	GetType() attr.Type
	GetDescription() string
	IsRequired() bool
	IsOptional() bool
	IsComputed() bool
	IsSensitive() bool
}

func attributeOf(name string, a schemaAttribute) attribute {
	at := attribute{name: name, typ: typeName(a.GetType()), description: a.GetDescription(),
		required: a.IsRequired(), optional: a.IsOptional(), comp: a.IsComputed(), sensitive: a.IsSensitive()}
	switch n := a.(type) {
	case rsschema.SingleNestedAttribute:
		for name, a := range n.Attributes {
			at.nested = append(at.nested, attributeOf(name, a))
		}
	case dsschema.SingleNestedAttribute:
		for name, a := range n.Attributes {
			at.nested = append(at.nested, attributeOf(name, a))
		}
	}
	if at.nested != nil {
		at.typ = "Attributes"
	}
	return at
}

// page renders one page of the registry's docs.
func page(title, kind, description, example, importScript string, attrs []attribute) string {
	var b strings.Builder
	heading := title
	if kind != "" {
		heading = fmt.Sprintf("%s (%s)", title, kind)
		title = fmt.Sprintf("%s %s - sless", title, kind)
	}
	fmt.Fprintf(&b, "---\npage_title: %q\ndescription: |-\n  %s\n---\n\n# %s\n\n%s\n", title, description, heading, description)
	if ex := readExample(example); ex != "" {
		fmt.Fprintf(&b, "\n## Example Usage\n\n```terraform\n%s```\n", ex)
	}
	b.WriteString("\n## Schema\n")
	writeAttributes(&b, attrs, "\n### %s\n\n")
	if ex := readExample(importScript); ex != "" {
		fmt.Fprintf(&b, "\n## Import\n\nImport is supported using the following syntax:\n\n```shell\n%s```\n", ex)
	}
	return b.String()
}

// writeAttributes writes attrs grouped as Required, Optional and
// Read-Only, each group under its title in titleFormat, and then the
// nested schema of each single nested attribute, as tfplugindocs does.
func writeAttributes(b *strings.Builder, attrs []attribute, titleFormat string) {
	slices.SortFunc(attrs, func(a, b attribute) int { return strings.Compare(a.name, b.name) })
	for _, group := range []struct {
		title string
		in    func(attribute) bool
	}{
		{"Required", func(a attribute) bool { return a.required }},
		{"Optional", func(a attribute) bool { return a.optional }},
		{"Read-Only", func(a attribute) bool { return a.comp && !a.optional && !a.required }},
	} {
		first := true
		for _, a := range attrs {
			if !group.in(a) {
				continue
			}
			if first {
				fmt.Fprintf(b, titleFormat, group.title)
				first = false
			}
			typ := a.typ
			if a.sensitive {
				typ += ", Sensitive"
			}
			fmt.Fprintf(b, "- `%s` (%s) %s", a.name, typ, a.description)
			if a.nested != nil {
				fmt.Fprintf(b, " (see [below for nested schema](#nestedatt--%s))", a.name)
			}
			b.WriteString("\n")
		}
	}
	for _, a := range attrs {
		if a.nested != nil {
			fmt.Fprintf(b, "\n<a id=\"nestedatt--%s\"></a>\n### Nested Schema for `%s`\n", a.name, a.name)
			writeAttributes(b, a.nested, "\n%s:\n\n")
		}
	}
}

// readExample returns the file below examples/, "" when there is none.
func readExample(name string) string {
	if name == "" {
		return ""
	}
	b, err := os.ReadFile(filepath.Join(moduleRoot, "examples", name))
	if err != nil {
		return ""
	}
	return string(b)
}

// typeName is the registry docs' name of an attribute type.
func typeName(t attr.Type) string {
	switch {
	case t.Equal(types.StringType):
		return "String"
	case t.Equal(types.Int64Type):
		return "Number"
	case t.Equal(types.BoolType):
		return "Boolean"
	case t.Equal(types.MapType{ElemType: types.StringType}):
		return "Map of String"
	case t.Equal(types.ListType{ElemType: types.StringType}):
		return "List of String"
	case t.Equal(types.SetType{ElemType: types.StringType}):
		return "Set of String"
	case t.Equal(types.MapType{ElemType: types.Int64Type}):
		return "Map of Number"
	}
	return t.String()
}
