package provider_test

import (
	"fmt"
	"regexp"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"

	"github.com/slessio/sless/httpapi/client"
)

// scaleConfig is a function with scaling attributes (HCL, "" for none)
// and the data sources reading it.
func scaleConfig(p *platform, dir, scale string) string {
	return p.providerBlock() + fmt.Sprintf(`
resource "sless_function" "scaled" {
  name       = "scaled"
  runtime    = "python3.11"
  source_dir = %q
  %s
}

data "sless_function" "scaled" {
  name = sless_function.scaled.name
}

data "sless_functions" "all" {
  depends_on = [sless_function.scaled]
}
`, dir, scale)
}

// TestAccFunctionScale drives min_instances, max_instances and concurrency
// through their life with a real terraform and server: created with them
// (the server and both data sources say the same), changed in part (what
// is left out goes back to 0, and no version is made: they are the
// function's), refused at plan when out of range or when min_instances
// exceeds max_instances (the function stays as it is), removed (the
// defaults, then no diff), changed outside Terraform (planned back), and
// imported.
func TestAccFunctionScale(t *testing.T) {
	t.Parallel()
	p := startPlatform(t)
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"handler.py": handler("scale")})

	const fn = "sless_function.scaled"
	hasScale := func(min, max, concurrency int) resource.TestCheckFunc {
		var checks []resource.TestCheckFunc
		for attr, v := range map[string]int{"min_instances": min, "max_instances": max, "concurrency": concurrency} {
			checks = append(checks,
				resource.TestCheckResourceAttr(fn, attr, fmt.Sprint(v)),
				resource.TestCheckResourceAttr("data.sless_function.scaled", attr, fmt.Sprint(v)),
				resource.TestCheckResourceAttr("data.sless_functions.all", "functions.0."+attr, fmt.Sprint(v)))
		}
		checks = append(checks, func(*terraform.State) error {
			f, err := p.Client.GetFunction(ctx, "scaled")
			if err != nil {
				return err
			}
			if got, want := [3]int{f.MinInstances, f.MaxInstances, f.Concurrency}, [3]int{min, max, concurrency}; got != want {
				return fmt.Errorf("the server's min_instances, max_instances, concurrency = %v; want %v", got, want)
			}
			return nil
		})
		return resource.ComposeAggregateTestCheckFunc(checks...)
	}
	noVersion := resource.ComposeAggregateTestCheckFunc(
		resource.TestCheckResourceAttr(fn, "phase", "Ready"),
		resource.TestCheckResourceAttr(fn, "version", "1"),
		resource.TestCheckResourceAttr(fn, "active_version", "1"),
	)
	updates := resource.ConfigPlanChecks{
		PreApply:             []plancheck.PlanCheck{plancheck.ExpectResourceAction(fn, plancheck.ResourceActionUpdate)},
		PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
	}
	set := scaleConfig(p, dir, `min_instances = 1
  max_instances = 3
  concurrency   = 4`)
	partial := scaleConfig(p, dir, `max_instances = 5`)
	none := scaleConfig(p, dir, "")

	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: providers,
		Steps: []resource.TestStep{
			{
				Config:           set,
				ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
				Check:            resource.ComposeAggregateTestCheckFunc(noVersion, hasScale(1, 3, 4)),
			},
			{
				// min_instances and concurrency left out: their default, 0.
				// Changing only the scaling makes no version.
				Config:           partial,
				ConfigPlanChecks: updates,
				Check:            resource.ComposeAggregateTestCheckFunc(noVersion, hasScale(0, 5, 0)),
			},
			{
				// Out of range, and more kept running than may run: refused
				// at plan, nothing changes.
				Config:      scaleConfig(p, dir, `concurrency = 1001`),
				ExpectError: regexp.MustCompile(`(?s)Invalid concurrency.*concurrency must be between 0 and 1000`),
			},
			{
				Config: scaleConfig(p, dir, `min_instances = 6
  max_instances = 5`),
				ExpectError: regexp.MustCompile(`(?s)Invalid min_instances.*min_instances: 6 is more than max_instances \(5\)`),
			},
			{
				// Removed: back to the defaults, and no diff after.
				Config:           none,
				ConfigPlanChecks: updates,
				Check:            resource.ComposeAggregateTestCheckFunc(noVersion, hasScale(0, 0, 0)),
			},
			{
				// Changed outside Terraform: planned back to what the
				// configuration says, the defaults.
				PreConfig: func() {
					_, err := p.Client.UpdateFunction(ctx, "scaled", client.UpdateFunctionRequest{
						MinInstances: client.Ptr(2), Concurrency: client.Ptr(7)})
					if err != nil {
						t.Fatal(err)
					}
				},
				Config:           none,
				ConfigPlanChecks: updates,
				Check:            hasScale(0, 0, 0),
			},
			{Config: set, Check: resource.ComposeAggregateTestCheckFunc(noVersion, hasScale(1, 3, 4))},
			{
				Config:                               set,
				ResourceName:                         fn,
				ImportState:                          true,
				ImportStateId:                        "scaled",
				ImportStateVerify:                    true,
				ImportStateVerifyIgnore:              []string{"source_dir"},
				ImportStateVerifyIdentifierAttribute: "name",
				ImportStateCheck: func(states []*terraform.InstanceState) error {
					if len(states) != 1 || states[0].Attributes["min_instances"] != "1" || states[0].Attributes["concurrency"] != "4" {
						return fmt.Errorf("imported states %v; want one with min_instances 1 and concurrency 4", states)
					}
					return nil
				},
			},
		},
		CheckDestroy: func(*terraform.State) error { return p.nothingLeft(t) },
	})
}
