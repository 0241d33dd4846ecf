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
	"github.com/slessio/sless/internal/testutil"
)

// failing is a Python function that fails (500) when its event says so.
const failing = `def handle(event):
    if event.get("fail"):
        raise RuntimeError("asked to fail")
    return {"ok": True}
`

// asyncConfig is a function with async (HCL of the attribute, "" for none)
// and the data sources reading it.
func asyncConfig(p *platform, dir, async string) string {
	return p.providerBlock() + fmt.Sprintf(`
resource "sless_function" "queued" {
  name       = "queued"
  runtime    = "python3.11"
  source_dir = %q
  %s
}

data "sless_function" "queued" {
  name = sless_function.queued.name
}

data "sless_functions" "all" {
  depends_on = [sless_function.queued]
}
`, dir, async)
}

// TestAccFunctionAsync drives the async attribute through its life with a
// real terraform and server: created with it (the server and both data
// sources say the same), changed in part (the fields left out go back to
// their defaults, and the new max_retries is in force: a failing
// invocation is a dead letter after one attempt), an invalid value fails at
// plan leaving the function as it is, removed (the defaults, planned as an
// update and then no diff), changed outside Terraform (planned back to the
// defaults), and imported.
func TestAccFunctionAsync(t *testing.T) {
	t.Parallel()
	p := startPlatform(t)
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"handler.py": failing})

	const fn = "sless_function.queued"
	hasAsync := func(retries, age, concurrency int) resource.TestCheckFunc {
		want := client.AsyncConfig{MaxRetries: retries, MaxEventAgeSec: age, MaxConcurrency: concurrency}
		return resource.ComposeAggregateTestCheckFunc(
			resource.TestCheckResourceAttr(fn, "async.max_retries", fmt.Sprint(retries)),
			resource.TestCheckResourceAttr(fn, "async.max_event_age_sec", fmt.Sprint(age)),
			resource.TestCheckResourceAttr(fn, "async.max_concurrency", fmt.Sprint(concurrency)),
			resource.TestCheckResourceAttr("data.sless_function.queued", "async.max_retries", fmt.Sprint(retries)),
			resource.TestCheckResourceAttr("data.sless_function.queued", "async.max_event_age_sec", fmt.Sprint(age)),
			resource.TestCheckResourceAttr("data.sless_function.queued", "async.max_concurrency", fmt.Sprint(concurrency)),
			resource.TestCheckResourceAttr("data.sless_functions.all", "functions.0.async.max_retries", fmt.Sprint(retries)),
			func(*terraform.State) error {
				f, err := p.Client.GetFunction(ctx, "queued")
				if err != nil {
					return err
				}
				if f.Async != want {
					return fmt.Errorf("the server's async = %+v; want %+v", f.Async, want)
				}
				return nil
			},
		)
	}
	noDiffAfter := resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}}
	updates := resource.ConfigPlanChecks{
		PreApply:             []plancheck.PlanCheck{plancheck.ExpectResourceAction(fn, plancheck.ResourceActionUpdate)},
		PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
	}
	set := asyncConfig(p, dir, `async = {
    max_retries       = 5
    max_event_age_sec = 3600
    max_concurrency   = 4
  }`)
	partial := asyncConfig(p, dir, `async = {
    max_retries       = 0
    max_event_age_sec = 60
  }`)
	none := asyncConfig(p, dir, "")

	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: providers,
		Steps: []resource.TestStep{
			{
				Config:           set,
				ConfigPlanChecks: noDiffAfter,
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(fn, "phase", "Ready"),
					resource.TestCheckResourceAttr(fn, "version", "1"),
					hasAsync(5, 3600, 4),
				),
			},
			{
				// max_concurrency left out of async: its default, 0. The
				// async configuration is the function's: changing only it
				// makes no version.
				Config:           partial,
				ConfigPlanChecks: updates,
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(fn, "phase", "Ready"),
					resource.TestCheckResourceAttr(fn, "version", "1"),
					resource.TestCheckResourceAttr(fn, "active_version", "1"),
					hasAsync(0, 60, 0),
					func(*terraform.State) error { return deadAfter(t, p, "queued", 1) },
				),
			},
			{
				// Out of range: refused at plan, nothing changes.
				Config: asyncConfig(p, dir, `async = {
    max_retries = 11
  }`),
				ExpectError: regexp.MustCompile(`(?s)Invalid async.max_retries.*async.max_retries must be between 0 and 10`),
			},
			{
				// Removed: back to the defaults, and no diff after.
				Config:           none,
				ConfigPlanChecks: updates,
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(fn, "version", "1"),
					hasAsync(2, 21600, 0),
				),
			},
			{
				// Changed outside Terraform: planned back to what the
				// configuration says, the defaults.
				PreConfig: func() {
					_, err := p.Client.UpdateFunction(ctx, "queued", client.UpdateFunctionRequest{
						Async: &client.AsyncPatch{MaxRetries: client.Ptr(7)}})
					if err != nil {
						t.Fatal(err)
					}
				},
				Config:           none,
				ConfigPlanChecks: updates,
				Check:            hasAsync(2, 21600, 0),
			},
			{Config: set, Check: hasAsync(5, 3600, 4)},
			{
				Config:                               set,
				ResourceName:                         fn,
				ImportState:                          true,
				ImportStateId:                        "queued",
				ImportStateVerify:                    true,
				ImportStateVerifyIgnore:              []string{"source_dir"},
				ImportStateVerifyIdentifierAttribute: "name",
				ImportStateCheck: func(states []*terraform.InstanceState) error {
					if len(states) != 1 || states[0].Attributes["async.max_concurrency"] != "4" {
						return fmt.Errorf("imported states %v; want one with async.max_concurrency 4", states)
					}
					return nil
				},
			},
		},
		CheckDestroy: func(*terraform.State) error { return p.nothingLeft(t) },
	})
}

// deadAfter invokes function asynchronously with an event it fails on and
// checks that the invocation is a dead letter after attempts attempts.
func deadAfter(t *testing.T, p *platform, function string, attempts int) error {
	t.Helper()
	acc, err := p.Client.InvokeAsync(ctx, function, []byte(`{"fail": true}`), client.AsyncOptions{})
	if err != nil {
		return err
	}
	var inv *client.AsyncInvocation
	testutil.Eventually(t, time.Minute, func() error {
		inv, err = p.Client.GetAsyncInvocation(ctx, function, acc.InvocationID)
		if err != nil {
			return err
		}
		if inv.State != "dead_lettered" {
			return fmt.Errorf("invocation %s is %s", inv.InvocationID, inv.State)
		}
		return nil
	})
	if len(inv.Attempts) != attempts {
		return fmt.Errorf("dead letter after %d attempts (%+v); want %d", len(inv.Attempts), inv.Attempts, attempts)
	}
	return nil
}
