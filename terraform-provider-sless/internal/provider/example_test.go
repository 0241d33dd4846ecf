package provider_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
)

// TestAccPrototypeExample applies examples/prototype/main.tf, the README's
// main.tf, as it is (endpoint and token from SLESS_ENDPOINT and
// SLESS_TOKEN): the job prepares, the reader answers at the output URL.
// Not parallel: it sets the process's environment, which the provider,
// running in this process, reads.
func TestAccPrototypeExample(t *testing.T) {
	p := startPlatform(t)
	t.Setenv("SLESS_ENDPOINT", p.URL)
	t.Setenv("SLESS_TOKEN", p.Token)
	dir, err := filepath.Abs(filepath.Join(moduleRoot, "examples", "prototype"))
	if err != nil {
		t.Fatal(err)
	}
	main, err := os.ReadFile(filepath.Join(dir, "main.tf"))
	if err != nil {
		t.Fatal(err)
	}
	config := strings.ReplaceAll(string(main), "${path.module}", dir)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: providers,
		Steps: []resource.TestStep{{
			Config: config,
			Check: resource.ComposeAggregateTestCheckFunc(
				resource.TestCheckOutput("prepared", `{"table": "items", "rows": 3}`),
				resource.TestCheckResourceAttr("sless_trigger.nightly_setup", "enabled", "false"),
				func(s *terraform.State) error {
					url := s.RootModule().Outputs["reader_url"].Value.(string)
					status, body, err := post(url, `{"limit": 2}`)
					var got struct {
						Table string
						Rows  []map[string]any
					}
					if err != nil || status != 200 || json.Unmarshal([]byte(body), &got) != nil || got.Table != "items" || len(got.Rows) != 2 {
						return fmt.Errorf("POST %s = %d %s (%v)", url, status, body, err)
					}
					return nil
				},
			),
		}},
		CheckDestroy: func(*terraform.State) error { return p.nothingLeft(t) },
	})
}
