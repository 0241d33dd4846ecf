package importrules

import (
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/slessio/sless/"

// rule: every package matching pkg (a prefix ending in "/..." covers the
// packages below) must not depend, directly or not, on a package with one of
// the forbidden prefixes; only, when set, lists the module's packages it may
// depend on (a module package outside it is a violation).
type rule struct {
	pkg       string
	forbidden []string
	only      []string
	why       string
}

var controlPlane = []string{module + "store", module + "workers", module + "httpapi", module + "command", module + "invoke",
	"github.com/jackc/pgx", "github.com/riverqueue/"}

var rules = []rule{
	{pkg: "domain", only: []string{}, why: "domain is the pure core: the standard library only"},
	{pkg: "driver", only: []string{"domain"}, why: "the driver port imports only domain"},
	{pkg: "runtimes", only: []string{"domain"}, why: "runtimes describe the wrappers from domain's types only"},
	{pkg: "localdriver/...", forbidden: controlPlane, why: "a driver never imports the control plane (store, workers, pgx, River)"},
	{pkg: "k8sdriver/...", forbidden: controlPlane, why: "a driver never imports the control plane (store, workers, pgx, River)"},
	{pkg: "secrets", forbidden: []string{module + "store", module + "workers", module + "httpapi", module + "command", module + "outbox", "github.com/riverqueue"},
		why: "secrets seals values below the control plane: nothing there could log a value or queue it in a job's args"},
	{pkg: "httpapi/proxy", forbidden: []string{module + "workers"}, why: "the proxy never imports the workers"},
	{pkg: "invoke", forbidden: []string{module + "workers", module + "httpapi", module + "command"},
		why: "the invoke service is below the proxy and the workers: domain, driver and store only"},
	{pkg: "outbox", forbidden: []string{module + "store", module + "workers", module + "httpapi", module + "command"},
		why: "the outbox's job kinds sit below the command layer and the workers"},
	{pkg: "command", forbidden: []string{module + "workers", module + "httpapi", "github.com/labstack/echo"},
		why: "the command layer is below the API and the workers, and never speaks HTTP"},
}

func TestImportRules(t *testing.T) {
	for _, r := range rules {
		t.Run(r.pkg, func(t *testing.T) {
			out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", module+r.pkg).CombinedOutput()
			if err != nil {
				t.Fatalf("go list %s: %v\n%s", r.pkg, err, out)
			}
			self := module + strings.TrimSuffix(r.pkg, "/...")
			for _, dep := range strings.Fields(string(out)) {
				if dep == self || strings.HasPrefix(dep, self+"/") {
					continue
				}
				for _, f := range r.forbidden {
					if strings.HasPrefix(dep, f) {
						t.Errorf("%s depends on %s: %s", r.pkg, dep, r.why)
					}
				}
				if r.only != nil && !allowed(dep, r.only) {
					t.Errorf("%s depends on %s: %s", r.pkg, dep, r.why)
				}
			}
		})
	}
}

// allowed says whether dep is one of the module packages in only (anything
// outside the module is not: those rules allow the standard library only).
func allowed(dep string, only []string) bool {
	for _, o := range only {
		if dep == module+o {
			return true
		}
	}
	return false
}
