package provider_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"

	"github.com/slessio/sless/httpapi/client"
	"github.com/slessio/sless/internal/testutil"
	"github.com/slessio/sless/terraform-provider-sless/internal/provider"
)

// handler is a Python function answering with its code's mark and the
// GREETING variable.
func handler(mark string) string {
	return fmt.Sprintf(`import os


def handle(event):
    return {"mark": %q, "greeting": os.environ.get("GREETING", ""), "name": event.get("name")}
`, mark)
}

// functionConfig is the prototype users' pattern: a function from a
// directory behind an http trigger, its URL as an output, and the data
// sources.
func functionConfig(p *platform, dir, greeting string, enabled bool) string {
	return p.providerBlock() + fmt.Sprintf(`
resource "sless_function" "reader" {
  name       = "reader"
  runtime    = "python3.11"
  entrypoint = "handler.handle"
  source_dir = %q
  env_vars = {
    GREETING = %q
  }
}

resource "sless_trigger" "web" {
  name     = "reader-http"
  type     = "http"
  function = sless_function.reader.name
  enabled  = %t
}

data "sless_function" "reader" {
  name = sless_function.reader.name
}

data "sless_functions" "all" {
  depends_on = [sless_function.reader]
}
`, dir, greeting, enabled)
}

// urlOutput is the output of the http trigger's URL. (Import steps go
// without it: their state holds only the imported resource, so the output
// would be null, which the testing framework cannot read.)
const urlOutput = `
output "url" {
  value = sless_trigger.web.url
}
`

// TestAccFunction drives one function through its life with a real
// terraform: create from source_dir until Ready and serving, an unchanged
// directory plans nothing, an edited file plans an update that serves the
// new code, an env change updates in place, the trigger stops and starts,
// import, drift (deleted behind Terraform's back) re-creates, and destroy
// leaves nothing, no process included.
func TestAccFunction(t *testing.T) {
	t.Parallel()
	p := startPlatform(t)
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"handler.py": handler("v1"), "lib/util.py": "X = 1\n"})

	answers := func(wantMark, wantGreeting string) resource.TestCheckFunc {
		return func(s *terraform.State) error {
			url := s.RootModule().Outputs["url"].Value.(string)
			status, body, err := post(url, `{"name":"tf"}`)
			if err != nil || status != 200 {
				return fmt.Errorf("POST %s = %d %s (%v)", url, status, body, err)
			}
			var got struct{ Mark, Greeting, Name string }
			if err := json.Unmarshal([]byte(body), &got); err != nil || got.Mark != wantMark || got.Greeting != wantGreeting || got.Name != "tf" {
				return fmt.Errorf("POST %s = %s; want mark %s, greeting %s and name tf", url, body, wantMark, wantGreeting)
			}
			return nil
		}
	}
	var firstHash string
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: providers,
		Steps: []resource.TestStep{
			{
				Config: functionConfig(p, dir, "hello", true) + urlOutput,
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr("sless_function.reader", "phase", "Ready"),
					resource.TestCheckResourceAttr("sless_function.reader", "version", "1"),
					resource.TestCheckResourceAttr("sless_function.reader", "active_version", "1"),
					resource.TestCheckResourceAttr("sless_function.reader", "memory_mb", "128"),
					resource.TestCheckResourceAttr("sless_function.reader", "timeout_sec", "30"),
					resource.TestCheckResourceAttr("sless_function.reader", "max_concurrency", "0"),
					resource.TestCheckResourceAttr("sless_function.reader", "retry_safe", "false"),
					resource.TestCheckResourceAttr("sless_function.reader", "async.max_retries", "2"),
					resource.TestCheckResourceAttr("sless_function.reader", "async.max_event_age_sec", "21600"),
					resource.TestCheckResourceAttr("sless_function.reader", "async.max_concurrency", "0"),
					resource.TestCheckResourceAttr("sless_function.reader", "min_instances", "0"),
					resource.TestCheckResourceAttr("sless_function.reader", "max_instances", "0"),
					resource.TestCheckResourceAttr("sless_function.reader", "concurrency", "0"),
					resource.TestMatchResourceAttr("sless_function.reader", "code_hash", regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)),
					resource.TestMatchResourceAttr("sless_function.reader", "last_built_at", regexp.MustCompile(`^20\d\d-`)),
					resource.TestCheckResourceAttr("sless_trigger.web", "enabled", "true"),
					resource.TestMatchResourceAttr("sless_trigger.web", "url", regexp.MustCompile(`/fn/sless-[0-9a-f]+/reader$`)),
					resource.TestCheckResourceAttr("data.sless_function.reader", "phase", "Ready"),
					resource.TestCheckResourceAttr("data.sless_function.reader", "env_vars.GREETING", "hello"),
					resource.TestCheckResourceAttr("data.sless_functions.all", "names.#", "1"),
					resource.TestCheckResourceAttr("data.sless_functions.all", "functions.0.name", "reader"),
					func(s *terraform.State) error {
						firstHash = s.RootModule().Resources["sless_function.reader"].Primary.Attributes["code_hash"]
						return nil
					},
					answers("v1", "hello"),
				),
			},
			{
				// A file changed inside source_dir shows in the plan.
				PreConfig: func() { writeFiles(t, dir, map[string]string{"handler.py": handler("v2")}) },
				Config:    functionConfig(p, dir, "hello", true) + urlOutput,
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction("sless_function.reader", plancheck.ResourceActionUpdate),
						plancheck.ExpectResourceAction("sless_trigger.web", plancheck.ResourceActionNoop),
					},
					PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr("sless_function.reader", "version", "2"),
					resource.TestCheckResourceAttr("sless_function.reader", "active_version", "2"),
					func(s *terraform.State) error {
						if h := s.RootModule().Resources["sless_function.reader"].Primary.Attributes["code_hash"]; h == firstHash {
							return fmt.Errorf("code_hash %s did not change with the code", h)
						}
						return nil
					},
					answers("v2", "hello"),
				),
			},
			{
				// Configuration only: an update in place, a new version of the same code.
				Config: functionConfig(p, dir, "bonjour", true) + urlOutput,
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{plancheck.ExpectResourceAction("sless_function.reader", plancheck.ResourceActionUpdate)},
				},
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr("sless_function.reader", "env_vars.GREETING", "bonjour"),
					resource.TestCheckResourceAttr("sless_function.reader", "phase", "Ready"),
					answers("v2", "bonjour"),
				),
			},
			{
				// Disable the trigger in place: the function stops answering.
				Config: functionConfig(p, dir, "bonjour", false) + urlOutput,
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction("sless_trigger.web", plancheck.ResourceActionUpdate),
						plancheck.ExpectResourceAction("sless_function.reader", plancheck.ResourceActionNoop),
					},
				},
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr("sless_trigger.web", "enabled", "false"),
					func(s *terraform.State) error {
						url := s.RootModule().Outputs["url"].Value.(string)
						if status, body, err := post(url, `{}`); err == nil && status == 200 {
							return fmt.Errorf("a disabled trigger still serves: %d %s", status, body)
						}
						return nil
					},
				),
			},
			{
				Config: functionConfig(p, dir, "bonjour", true) + urlOutput,
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr("sless_trigger.web", "enabled", "true"),
					answers("v2", "bonjour"),
				),
			},
			{
				// Import by name gives the state Terraform made.
				Config:                               functionConfig(p, dir, "bonjour", true),
				ResourceName:                         "sless_function.reader",
				ImportState:                          true,
				ImportStateId:                        "reader",
				ImportStateVerify:                    true,
				ImportStateVerifyIgnore:              []string{"source_dir"},
				ImportStateVerifyIdentifierAttribute: "name",
			},
			{
				Config:                               functionConfig(p, dir, "bonjour", true),
				ResourceName:                         "sless_trigger.web",
				ImportState:                          true,
				ImportStateId:                        "reader-http",
				ImportStateVerify:                    true,
				ImportStateVerifyIgnore:              []string{"active"}, // a status that changes by itself
				ImportStateVerifyIdentifierAttribute: "name",
			},
			{
				// Drift: deleted behind Terraform's back, planned for re-creation.
				PreConfig: func() {
					if err := p.Client.DeleteTrigger(ctx, "reader-http"); err != nil {
						t.Fatal(err)
					}
					if err := p.Client.DeleteFunction(ctx, "reader"); err != nil {
						t.Fatal(err)
					}
				},
				Config: functionConfig(p, dir, "bonjour", true) + urlOutput,
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction("sless_function.reader", plancheck.ResourceActionCreate),
						plancheck.ExpectResourceAction("sless_trigger.web", plancheck.ResourceActionCreate),
					},
				},
				Check: answers("v2", "bonjour"),
			},
		},
		CheckDestroy: func(*terraform.State) error { return p.nothingLeft(t) },
	})
}

// nothingLeft checks that the namespace has no function, trigger, job or
// secret left and that no function process runs.
func (p *platform) nothingLeft(t *testing.T) error {
	fns, err := p.Client.ListFunctions(ctx)
	if err != nil {
		return err
	}
	if len(fns) != 0 {
		return fmt.Errorf("functions left after destroy: %+v", fns)
	}
	trs, err := p.Client.ListTriggers(ctx, "")
	if err != nil {
		return err
	}
	if len(trs) != 0 {
		return fmt.Errorf("triggers left after destroy: %+v", trs)
	}
	jobs, err := p.Client.ListJobs(ctx, "")
	if err != nil {
		return err
	}
	if len(jobs) != 0 {
		return fmt.Errorf("jobs left after destroy: %+v", jobs)
	}
	secrets, err := p.Client.ListSecrets(ctx)
	if err != nil {
		return err
	}
	if len(secrets) != 0 {
		return fmt.Errorf("secrets left after destroy: %+v", secrets)
	}
	testutil.Eventually(t, time.Minute, func() error {
		if pids := p.processes(); len(pids) > 0 {
			return fmt.Errorf("function processes left after destroy: %v", pids)
		}
		return nil
	})
	return nil
}

// TestAccBuildFailure: a build that fails fails the apply with the build's
// message, and the next apply with fixed code succeeds.
func TestAccBuildFailure(t *testing.T) {
	t.Parallel()
	p := startPlatform(t)
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"handler.py": "def handle(event):\n    return (\n"})
	config := p.providerBlock() + fmt.Sprintf(`
resource "sless_function" "broken" {
  name       = "broken"
  runtime    = "python3.11"
  source_dir = %q
  build_timeout_sec = 120
}
`, dir)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: providers,
		Steps: []resource.TestStep{
			{Config: config, ExpectError: regexp.MustCompile(`(?s)build of version 1 of broken failed:.*SyntaxError`)},
			{
				PreConfig: func() { writeFiles(t, dir, map[string]string{"handler.py": handler("fixed")}) },
				Config:    config,
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr("sless_function.broken", "phase", "Ready"),
					resource.TestCheckResourceAttr("sless_function.broken", "entrypoint", "handler.handle"),
				),
			},
		},
		CheckDestroy: func(*terraform.State) error { return p.nothingLeft(t) },
	})
}

// TestAccRevertAfterAFailedBuild (issue 28): an apply of code that fails
// its build fails, version 1 serving on; reverting the code then plans
// nothing, and the function is Ready on version 1 with no message (the
// failed version stays in its versions), serving version 1's code. A
// configuration change afterwards carries on that code, not the failed one.
func TestAccRevertAfterAFailedBuild(t *testing.T) {
	t.Parallel()
	p := startPlatform(t)
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"handler.py": handler("v1")})
	configWith := func(memoryMB int) string {
		return p.providerBlock() + fmt.Sprintf(`
resource "sless_function" "reverter" {
  name              = "reverter"
  runtime           = "python3.11"
  source_dir        = %q
  memory_mb         = %d
  build_timeout_sec = 120
}

resource "sless_trigger" "web" {
  name     = "reverter-http"
  type     = "http"
  function = sless_function.reverter.name
}

output "url" {
  value = sless_trigger.web.url
}
`, dir, memoryMB)
	}
	config := configWith(128)
	servesV1 := func(s *terraform.State) error {
		url := s.RootModule().Outputs["url"].Value.(string)
		status, body, err := post(url, `{"name":"tf"}`)
		var got struct{ Mark string }
		if err != nil || status != 200 || json.Unmarshal([]byte(body), &got) != nil || got.Mark != "v1" {
			return fmt.Errorf("POST %s = %d %s (%v); want version 1's answer", url, status, body, err)
		}
		return nil
	}
	ready := resource.ComposeAggregateTestCheckFunc(
		resource.TestCheckResourceAttr("sless_function.reverter", "phase", "Ready"),
		resource.TestCheckResourceAttr("sless_function.reverter", "message", ""),
		resource.TestCheckResourceAttr("sless_function.reverter", "active_version", "1"),
		servesV1,
	)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: providers,
		Steps: []resource.TestStep{
			{Config: config, Check: ready},
			{
				PreConfig:   func() { writeFiles(t, dir, map[string]string{"handler.py": "def handle(event):\n    return (\n"}) },
				Config:      config,
				ExpectError: regexp.MustCompile(`(?s)build of version 2 of reverter failed:.*SyntaxError`),
			},
			{
				// Back to version 1's code: nothing to change, and nothing failed.
				PreConfig: func() { writeFiles(t, dir, map[string]string{"handler.py": handler("v1")}) },
				Config:    config,
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply:             []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
					PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
				Check: resource.ComposeAggregateTestCheckFunc(ready,
					resource.TestCheckResourceAttr("sless_function.reverter", "version", "2"),
					func(*terraform.State) error {
						fn, err := p.Client.GetFunction(ctx, "reverter")
						if err != nil {
							return err
						}
						if f := fn.LastBuildFailure; f == nil || f.Version != 2 || !strings.Contains(f.Message, "SyntaxError") {
							return fmt.Errorf("last_build_failure = %+v; want version 2's SyntaxError", f)
						}
						return nil
					},
				),
			},
			{
				// A configuration change: version 3 of version 1's code.
				Config: configWith(256),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr("sless_function.reverter", "phase", "Ready"),
					resource.TestCheckResourceAttr("sless_function.reverter", "version", "3"),
					resource.TestCheckResourceAttr("sless_function.reverter", "active_version", "3"),
					resource.TestCheckResourceAttr("sless_function.reverter", "memory_mb", "256"),
					servesV1,
				),
			},
		},
		CheckDestroy: func(*terraform.State) error { return p.nothingLeft(t) },
	})
}

// TestAccDestroyTakesTheFunctionsJobs (issue 28): destroying a function
// deletes the jobs of it made outside Terraform too, as its triggers.
func TestAccDestroyTakesTheFunctionsJobs(t *testing.T) {
	t.Parallel()
	p := startPlatform(t)
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"handler.py": handler("jobs")})
	config := p.providerBlock() + fmt.Sprintf(`
resource "sless_function" "worker" {
  name       = "worker"
  runtime    = "python3.11"
  source_dir = %q
}
`, dir)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: providers,
		Steps: []resource.TestStep{{
			Config: config,
			Check: func(*terraform.State) error {
				// Made outside Terraform, as with the CLI.
				_, err := p.Client.CreateJob(ctx, client.CreateJobRequest{Name: "by-hand", Function: "worker"})
				return err
			},
		}},
		CheckDestroy: func(*terraform.State) error { return p.nothingLeft(t) },
	})
}

// TestAccCodePath uploads a zip named by code_path; code_hash is computed
// from it when left out.
func TestAccCodePath(t *testing.T) {
	t.Parallel()
	p := startPlatform(t)
	zipPath := filepath.Join(t.TempDir(), "fn.zip")
	writeZip(t, zipPath, map[string]string{"index.js": "exports.handle = async (event) => ({ node: true });\n"})
	config := p.providerBlock() + fmt.Sprintf(`
resource "sless_function" "node" {
  name      = "node"
  runtime   = "nodejs20"
  code_path = %q
}
`, zipPath)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: providers,
		Steps: []resource.TestStep{{
			Config: config,
			Check: resource.ComposeAggregateTestCheckFunc(
				resource.TestCheckResourceAttr("sless_function.node", "phase", "Ready"),
				resource.TestCheckResourceAttr("sless_function.node", "entrypoint", "index.handle"),
				resource.TestMatchResourceAttr("sless_function.node", "code_hash", regexp.MustCompile(`^sha256:`)),
			),
		}},
		CheckDestroy: func(*terraform.State) error { return p.nothingLeft(t) },
	})
}

// writeZip writes a zip of files to p.
func writeZip(t *testing.T, p string, files map[string]string) {
	t.Helper()
	dir := t.TempDir()
	writeFiles(t, dir, files)
	c, err := provider.ZipDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, c, 0o644); err != nil {
		t.Fatal(err)
	}
}
