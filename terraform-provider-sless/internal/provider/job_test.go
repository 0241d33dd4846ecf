package provider_test

import (
	"fmt"
	"regexp"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"

	"github.com/slessio/sless/httpapi/client"
	"github.com/slessio/sless/terraform-provider-sless/internal/provider"
)

// jobConfig is the prototype users' pattern of a job preparing something:
// a function counting its runs in its own log, and a job of it.
func jobConfig(p *platform, dir string, runID int) string {
	return p.providerBlock() + fmt.Sprintf(`
resource "sless_function" "prepare" {
  name       = "prepare"
  runtime    = "python3.11"
  source_dir = %q
  retry_safe = true
}

resource "sless_job" "setup" {
  name       = "setup-table"
  function   = sless_function.prepare.name
  event_json = jsonencode({ table = "items" })
  run_id     = %d
}

resource "sless_trigger" "nightly" {
  name     = "nightly"
  type     = "cron"
  function = sless_function.prepare.name
  schedule = "0 3 * * *"
}
`, dir, runID)
}

// TestAccJob: a job with run_id 0 does not run, 1 and 2 run it exactly
// twice and message holds the function's result; a cron trigger is made
// alongside; job and trigger import by name; a job deleted behind
// Terraform's back is re-created, and a job whose name exists is adopted.
func TestAccJob(t *testing.T) {
	t.Parallel()
	p := startPlatform(t)
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"handler.py": "def handle(event):\n    print('preparing', event['table'])\n    return {'created': event['table']}\n"})

	runs := func(want int) resource.TestCheckFunc {
		return func(*terraform.State) error {
			// The invocation log is written in batches: wait for the
			// records, then count them.
			jobRuns := 0
			deadline := time.Now().Add(10 * time.Second)
			for {
				page, err := p.Client.ListInvocations(ctx, "prepare", client.InvocationQuery{})
				if err != nil {
					return err
				}
				jobRuns = 0
				for _, inv := range page.Invocations {
					if inv.Trigger == "job" {
						jobRuns++
					}
				}
				if jobRuns >= want || time.Now().After(deadline) {
					break
				}
				time.Sleep(100 * time.Millisecond)
			}
			if jobRuns != want {
				return fmt.Errorf("the function ran %d times as a job; want %d", jobRuns, want)
			}
			return nil
		}
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: providers,
		Steps: []resource.TestStep{
			{
				Config: jobConfig(p, dir, 0),
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr("sless_job.setup", "phase", "Pending"),
					resource.TestCheckResourceAttr("sless_job.setup", "run_id", "0"),
					resource.TestCheckResourceAttr("sless_function.prepare", "retry_safe", "true"),
					resource.TestCheckResourceAttr("sless_trigger.nightly", "schedule", "0 3 * * *"),
					resource.TestCheckResourceAttr("sless_trigger.nightly", "url", ""),
					runs(0),
				),
			},
			{
				Config: jobConfig(p, dir, 1),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{plancheck.ExpectResourceAction("sless_job.setup", plancheck.ResourceActionUpdate)},
				},
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr("sless_job.setup", "phase", "Succeeded"),
					resource.TestCheckResourceAttr("sless_job.setup", "message", `{"created": "items"}`),
					resource.TestMatchResourceAttr("sless_job.setup", "completion_time", regexp.MustCompile(`^20\d\d-`)),
					runs(1),
				),
			},
			{
				Config: jobConfig(p, dir, 2),
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr("sless_job.setup", "run_id", "2"),
					resource.TestCheckResourceAttr("sless_job.setup", "phase", "Succeeded"),
					runs(2),
				),
			},
			{
				// Unchanged: nothing runs again.
				Config: jobConfig(p, dir, 2),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
				Check: runs(2),
			},
			{
				ResourceName:                         "sless_job.setup",
				ImportState:                          true,
				ImportStateId:                        "setup-table",
				ImportStateVerify:                    true,
				ImportStateVerifyIdentifierAttribute: "name",
			},
			{
				ResourceName:                         "sless_trigger.nightly",
				ImportState:                          true,
				ImportStateId:                        "nightly",
				ImportStateVerify:                    true,
				ImportStateVerifyIdentifierAttribute: "name",
				ImportStateVerifyIgnore:              []string{"active"},
			},
			{
				// Drift: the job is deleted behind Terraform's back, then
				// re-created by the apply, and runs once more.
				PreConfig: func() {
					if err := p.Client.DeleteJob(ctx, "setup-table"); err != nil {
						t.Fatal(err)
					}
				},
				Config: jobConfig(p, dir, 2),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{plancheck.ExpectResourceAction("sless_job.setup", plancheck.ResourceActionCreate)},
				},
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr("sless_job.setup", "phase", "Succeeded"),
					runs(3),
				),
			},
			{
				// Disable the cron trigger in place.
				Config: replaceOnce(jobConfig(p, dir, 2), `schedule = "0 3 * * *"`, `schedule = "0 3 * * *"
  enabled  = false`),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{plancheck.ExpectResourceAction("sless_trigger.nightly", plancheck.ResourceActionUpdate)},
				},
				Check: resource.TestCheckResourceAttr("sless_trigger.nightly", "enabled", "false"),
			},
		},
		CheckDestroy: func(*terraform.State) error { return p.nothingLeft(t) },
	})
}

// TestAccJobAdoptsExisting: creating a job whose name exists reads the
// existing job instead of failing, and runs it when run_id asks for more.
func TestAccJobAdoptsExisting(t *testing.T) {
	t.Parallel()
	p := startPlatform(t)
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"handler.py": "def handle(event):\n    return 'ok'\n"})
	config := func(runID int) string {
		return p.providerBlock() + fmt.Sprintf(`
resource "sless_job" "existing" {
  name     = "existing"
  function = "made-by-hand"
  run_id   = %d
}
`, runID)
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: providers,
		PreCheck: func() {
			// Made outside Terraform, as by the prototype's users' scripts.
			if _, err := p.Client.CreateFunction(ctx, client.CreateFunctionRequest{Name: "made-by-hand", Runtime: "python3.11"}); err != nil {
				t.Fatal(err)
			}
			zip, err := provider.ZipDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := p.Client.Upload(ctx, "made-by-hand", zip); err != nil {
				t.Fatal(err)
			}
			if _, err := p.Client.CreateJob(ctx, client.CreateJobRequest{Name: "existing", Function: "made-by-hand"}); err != nil {
				t.Fatal(err)
			}
		},
		Steps: []resource.TestStep{
			{Config: config(0), Check: resource.TestCheckResourceAttr("sless_job.existing", "phase", "Pending")},
			{Config: config(1), Check: resource.TestCheckResourceAttr("sless_job.existing", "message", `"ok"`)},
		},
	})
}

// replaceOnce replaces the first old in s with new, or panics.
func replaceOnce(s, old, new string) string {
	i := regexp.MustCompile(regexp.QuoteMeta(old)).FindStringIndex(s)
	if i == nil {
		panic("replaceOnce: " + old + " not found")
	}
	return s[:i[0]] + new + s[i[1]:]
}
