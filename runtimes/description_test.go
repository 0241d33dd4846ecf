package runtimes_test

import (
	"reflect"
	"slices"
	"testing"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/runtimes"
)

// TestDescriptionsMatchDomain keeps the two places a runtime is named in
// step: every runtime domain accepts has a folder and description here, and
// its default entrypoint is one the runtime installs.
func TestDescriptionsMatchDomain(t *testing.T) {
	t.Parallel()
	var known []string
	for _, r := range domain.Runtimes {
		known = append(known, string(r))
	}
	slices.Sort(known)
	if got := runtimes.Names(); !reflect.DeepEqual(got, known) {
		t.Fatalf("runtimes.Names() = %v, domain.Runtimes = %v: a runtime is one folder here plus one row in domain's runtime table", got, known)
	}
	for _, r := range domain.Runtimes {
		rt := mustLookup(t, string(r))
		d := runtimes.Describe(r)
		if d.Name != string(r) || rt.Description().Name != d.Name {
			t.Errorf("Describe(%q).Name = %q, Lookup's = %q", r, d.Name, rt.Description().Name)
		}
		if err := rt.Install(emptyInstallDir(t), domain.DefaultEntrypoint(r)); err != nil {
			t.Errorf("%s: Install with domain.DefaultEntrypoint %q: %v", r, domain.DefaultEntrypoint(r), err)
		}
	}
	if d := runtimes.Describe("ruby3"); !reflect.DeepEqual(d, runtimes.Description{}) {
		t.Errorf("Describe(unknown) = %+v, want the zero Description", d)
	}
}

func TestDescriptionEnvironment(t *testing.T) {
	t.Parallel()
	cases := []struct {
		runtime    domain.Runtime
		user       map[string]string
		memory     []string
		entrypoint []string
		buildArgs  []string
	}{
		{domain.RuntimePython311, nil, nil, []string{"SLESS_ENTRYPOINT=handler.handle"}, nil},
		{domain.RuntimeNodeJS20, nil, []string{"NODE_OPTIONS=--max-old-space-size=256"}, []string{"SLESS_ENTRYPOINT=handler.handle"}, nil},
		{domain.RuntimeNodeJS20, map[string]string{"NODE_OPTIONS": " --enable-source-maps "}, []string{"NODE_OPTIONS=--max-old-space-size=256 --enable-source-maps"}, []string{"SLESS_ENTRYPOINT=handler.handle"}, nil},
		{domain.RuntimeGo123, nil, []string{"GOMEMLIMIT=256MiB"}, nil, []string{"SLESS_ENTRYPOINT=handler.handle"}},
		{domain.RuntimeGo123, map[string]string{"GOMEMLIMIT": "1GiB"}, nil, nil, []string{"SLESS_ENTRYPOINT=handler.handle"}},
		{"ruby3", nil, nil, []string{"SLESS_ENTRYPOINT=handler.handle"}, nil},
	}
	for _, c := range cases {
		d := runtimes.Describe(c.runtime)
		if got := d.MemoryEnv(256, c.user); !reflect.DeepEqual(got, c.memory) {
			t.Errorf("%s %v: MemoryEnv = %q, want %q", c.runtime, c.user, got, c.memory)
		}
		if got := d.ProcessEntrypointEnv("handler.handle"); !reflect.DeepEqual(got, c.entrypoint) {
			t.Errorf("%s: ProcessEntrypointEnv = %q, want %q", c.runtime, got, c.entrypoint)
		}
		if got := d.ImageBuildArgs("handler.handle"); !reflect.DeepEqual(got, c.buildArgs) {
			t.Errorf("%s: ImageBuildArgs = %q, want %q", c.runtime, got, c.buildArgs)
		}
		if known := slices.Contains(domain.Runtimes, c.runtime); d.ReadOnlyRoot != known {
			t.Errorf("%s: ReadOnlyRoot = %v, want %v", c.runtime, d.ReadOnlyRoot, known)
		}
	}
}
