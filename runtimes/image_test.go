package runtimes_test

import (
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/runtimes"
	"github.com/slessio/sless/store/codestore"
)

var updateImages = flag.Bool("update-images", false, "rewrite the golden Dockerfiles in testdata/images/")

// TestFunctionImageDockerfiles: the Dockerfile of a function image, as an
// upload generates it (codestore.Dockerfile with the runtime's ImageSteps), is
// the golden one for each runtime with and without dependencies; the
// dependency install comes before the copy of the code, and copies only the
// dependency file first when it needs nothing else of the zip.
func TestFunctionImageDockerfiles(t *testing.T) {
	for _, tc := range []struct {
		golden  string
		runtime domain.Runtime
		files   map[string]string
	}{
		{"python-plain", domain.RuntimePython311, map[string]string{"handler.py": ""}},
		{"python-empty-requirements", domain.RuntimePython311, map[string]string{"requirements.txt": "# nothing\n"}},
		{"python-index", domain.RuntimePython311, map[string]string{"requirements.txt": "psycopg2-binary==2.9.9\nrequests>=2\n"}},
		{"python-vendored", domain.RuntimePython311, map[string]string{"requirements.txt": "--no-index\n--find-links wheels\n./libs/mylib\n"}},
		{"nodejs-plain", domain.RuntimeNodeJS20, map[string]string{"index.js": ""}},
		{"nodejs", domain.RuntimeNodeJS20, map[string]string{"package.json": `{"dependencies": {"ms": "2.1.3"}}`}},
		{"nodejs-lockfile", domain.RuntimeNodeJS20, map[string]string{"package.json": `{"dependencies": {"ms": "2.1.3"}}`, "package-lock.json": "{}"}},
		{"nodejs-local", domain.RuntimeNodeJS20, map[string]string{"package.json": `{"dependencies": {"greet": "file:./greet"}}`}},
		{"go", domain.RuntimeGo123, map[string]string{"go.mod": "module fn\n"}},
	} {
		t.Run(tc.golden, func(t *testing.T) {
			before, after := runtimes.Describe(tc.runtime).ImageSteps(func(name string) ([]byte, bool) {
				data, ok := tc.files[name]
				return []byte(data), ok
			})
			got := codestore.Dockerfile("sless/"+string(tc.runtime), codestore.ImageSteps{BeforeCode: before, AfterCode: after})
			path := filepath.Join("testdata", "images", tc.golden+".Dockerfile")
			if *updateImages {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if got != string(want) {
				t.Errorf("Dockerfile:\n%s\nwant (%s):\n%s", got, path, want)
			}
			lines := strings.Split(got, "\n")
			install := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, "RUN ") })
			code := -1
			for i, l := range lines {
				if l == "COPY . /app/function/" {
					code = i // the last one: the copy of the code
				}
			}
			if len(before) > 0 && (install < 0 || install > code) {
				t.Errorf("the dependency install (line %d) does not precede the copy of the code (line %d)", install, code)
			}
		})
	}
}

// TestImageBuildArgsCarryTheOperatorsIndex: the package index the operator
// gives reaches a Python image build as build arguments (not the image).
func TestImageBuildArgsCarryTheOperatorsIndex(t *testing.T) {
	py := runtimes.Describe(domain.RuntimePython311)
	if args := py.ImageBuildArgs("handler.handle"); len(args) != 0 {
		t.Fatalf("without operator settings: %v", args)
	}
	t.Setenv(runtimes.EnvPipIndexURL, "https://pypi.example.com/simple")
	t.Setenv(runtimes.EnvPipExtraIndexURL, "https://extra.example.com/simple")
	want := []string{"PIP_EXTRA_INDEX_URL=https://extra.example.com/simple", "PIP_INDEX_URL=https://pypi.example.com/simple"}
	if args := py.ImageBuildArgs("handler.handle"); !slices.Equal(args, want) {
		t.Fatalf("build args %v, want %v", args, want)
	}
	if args := runtimes.Describe(domain.RuntimeGo123).ImageBuildArgs("Handle"); !slices.Equal(args, []string{"SLESS_ENTRYPOINT=Handle"}) {
		t.Fatalf("go build args %v", args)
	}
}
