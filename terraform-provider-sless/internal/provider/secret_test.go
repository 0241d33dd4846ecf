package provider_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"

	"github.com/slessio/sless/httpapi/client"
	"github.com/slessio/sless/secrets"
	"github.com/slessio/sless/terraform-provider-sless/internal/provider"
)

// secretReader is a Python function answering with its secret as its
// environment variable DB_PASSWORD and as its one file.
const secretReader = `import os


def handle(event):
    [name] = os.listdir("/run/secrets")
    with open("/run/secrets/" + name) as f:
        return {"env": os.environ.get("DB_PASSWORD", ""), "file": f.read()}
`

// secretConfig is a secret, a function using it as an env var and as a
// file, and its http trigger (urlOutput adds the trigger's URL).
func secretConfig(p *platform, dir, value string) string {
	return secretConfigNamed(p, dir, "db", value)
}

// secretConfigNamed is secretConfig with the secret named name.
func secretConfigNamed(p *platform, dir, name, value string) string {
	return p.providerBlock() + fmt.Sprintf(`
resource "sless_secret" "db" {
  name  = %q
  value = %q

  lifecycle {
    create_before_destroy = true # a secret in use cannot go before its functions leave it
  }
}

resource "sless_function" "reader" {
  name         = "reader"
  runtime      = "python3.11"
  source_dir   = %q
  secrets      = { DB_PASSWORD = sless_secret.db.name }
  secret_files = [sless_secret.db.name]
}

resource "sless_trigger" "web" {
  name     = "reader-http"
  type     = "http"
  function = sless_function.reader.name
}
`, name, value, dir)
}

// servesSecret checks that the function at the output url has value as its
// env var and as its file, right after the apply.
func servesSecret(value string) resource.TestCheckFunc {
	return func(s *terraform.State) error {
		url := s.RootModule().Outputs["url"].Value.(string)
		status, body, err := post(url, `{}`)
		var got struct{ Env, File string }
		if err != nil || status != 200 || json.Unmarshal([]byte(body), &got) != nil || got.Env != value || got.File != value {
			return fmt.Errorf("POST %s = %d %s (%v); want %q as env and file", url, status, body, err, value)
		}
		return nil
	}
}

// TestAccSecret drives a secret and a function using it with a real
// terraform: create (the function reads the value as env var and file), a
// new value updates the secret in place and apply returns once the
// function serves it from a new version, a refresh shows the function's
// new version and the secret's user, import by name, a value set outside
// Terraform is planned back, and destroy leaves nothing.
func TestAccSecret(t *testing.T) {
	t.Parallel()
	p := startPlatform(t)
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"handler.py": secretReader})
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: providers,
		Steps: []resource.TestStep{
			{
				Config: secretConfig(p, dir, "first-pa55") + urlOutput,
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr("sless_secret.db", "version", "1"),
					resource.TestCheckResourceAttr("sless_function.reader", "secrets.DB_PASSWORD", "db"),
					resource.TestCheckResourceAttr("sless_function.reader", "secret_files.#", "1"),
					resource.TestCheckResourceAttr("sless_function.reader", "secret_versions.db", "1"),
					resource.TestCheckResourceAttr("sless_function.reader", "version", "1"),
					servesSecret("first-pa55"),
				),
			},
			{
				// A new value: the secret changes in place, the function
				// gets a new version on the server's side.
				Config: secretConfig(p, dir, "second-pa55") + urlOutput,
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction("sless_secret.db", plancheck.ResourceActionUpdate),
						plancheck.ExpectResourceAction("sless_function.reader", plancheck.ResourceActionNoop),
					},
					PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr("sless_secret.db", "version", "2"),
					resource.TestCheckResourceAttr("sless_secret.db", "used_by.#", "1"),
					resource.TestCheckResourceAttr("sless_secret.db", "used_by.0", "reader"),
					servesSecret("second-pa55"),
					func(*terraform.State) error {
						fn, err := p.Client.GetFunction(ctx, "reader")
						if err != nil || fn.ActiveVersion != 2 || fn.ServingVersion != 2 || fn.SecretVersions["db"] != 2 {
							return fmt.Errorf("function after the new value: %+v (%v); want version 2 serving secret version 2", fn, err)
						}
						return nil
					},
				),
			},
			{
				// A refresh brings the function's new version into the state.
				RefreshState: true,
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr("sless_function.reader", "version", "2"),
					resource.TestCheckResourceAttr("sless_function.reader", "secret_versions.db", "2"),
				),
			},
			{
				// Import by name: everything but the value, which the API
				// never returns.
				Config:                               secretConfig(p, dir, "second-pa55"),
				ResourceName:                         "sless_secret.db",
				ImportState:                          true,
				ImportStateId:                        "db",
				ImportStateVerify:                    true,
				ImportStateVerifyIgnore:              []string{"value"},
				ImportStateVerifyIdentifierAttribute: "name",
			},
			{
				// A value set outside Terraform is planned back.
				PreConfig: func() {
					if _, err := p.Client.SetSecret(ctx, "db", []byte("set-by-hand")); err != nil {
						t.Fatal(err)
					}
				},
				Config: secretConfig(p, dir, "second-pa55") + urlOutput,
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{plancheck.ExpectResourceAction("sless_secret.db", plancheck.ResourceActionUpdate)},
				},
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr("sless_secret.db", "version", "4"),
					servesSecret("second-pa55"),
				),
			},
			{
				// A new name replaces the secret: the new one is made, the
				// function moves to it, then the old one goes.
				Config: secretConfigNamed(p, dir, "db-renamed", "third-pa55") + urlOutput,
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction("sless_secret.db", plancheck.ResourceActionCreateBeforeDestroy),
						plancheck.ExpectResourceAction("sless_function.reader", plancheck.ResourceActionUpdate),
					},
					PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr("sless_secret.db", "version", "1"),
					resource.TestCheckResourceAttr("sless_function.reader", "secrets.DB_PASSWORD", "db-renamed"),
					resource.TestCheckResourceAttr("sless_function.reader", "secret_versions.db-renamed", "1"),
					servesSecret("third-pa55"),
					func(*terraform.State) error {
						if _, err := p.Client.GetSecret(ctx, "db"); !client.IsNotFound(err) {
							return fmt.Errorf("the old secret after the rename: %v, want 404", err)
						}
						return nil
					},
				),
			},
		},
		CheckDestroy: func(*terraform.State) error { return p.nothingLeft(t) },
	})
}

// TestAccSecretValueNotShown runs the terraform CLI itself on the provider's
// binary and reads what it prints: neither apply, plan (of a new value) nor
// destroy shows a value, the plan says it is sensitive; the state holds it,
// as the docs warn.
func TestAccSecretValueNotShown(t *testing.T) {
	t.Parallel()
	p := startPlatform(t)
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"handler.py": secretReader})
	tf := terraformCLI(t)
	work := t.TempDir()
	write := func(value string) {
		if err := os.WriteFile(filepath.Join(work, "main.tf"), []byte(secretConfig(p, dir, value)+urlOutput), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	const first, second = "first-Value-0f-db", "second-Value-0f-db"
	write(first)
	printed := tf(work, "apply", "-auto-approve", "-no-color")
	write(second)
	plan := tf(work, "plan", "-no-color")
	printed += plan
	if !regexp.MustCompile(`~ value\s+= \(sensitive value\)`).MatchString(plan) || !strings.Contains(plan, "1 to change") {
		t.Fatalf("terraform plan of a new value:\n%s\nwant the value changed and shown as (sensitive value)", plan)
	}
	printed += tf(work, "apply", "-auto-approve", "-no-color")
	if fn, err := p.Client.GetFunction(ctx, "reader"); err != nil || fn.SecretVersions["db"] != 2 || fn.ServingVersion != 2 {
		t.Fatalf("after the apply of a new value the function is %+v (%v); want version 2 serving secret version 2", fn, err)
	}
	if state, err := os.ReadFile(filepath.Join(work, "terraform.tfstate")); err != nil || !strings.Contains(string(state), second) {
		t.Fatalf("the state does not hold the value (%v): the docs say it does", err)
	}
	printed += tf(work, "destroy", "-auto-approve", "-no-color")
	for _, v := range []string{first, second} {
		if strings.Contains(printed, v) {
			t.Fatalf("terraform printed the value %q:\n%s", v, printed)
		}
	}
	if err := p.nothingLeft(t); err != nil {
		t.Fatal(err)
	}
}

// TestMaxSecretValueBytes: the provider's limit is the server's.
func TestMaxSecretValueBytes(t *testing.T) {
	if provider.MaxSecretValueBytes != secrets.MaxValueBytes {
		t.Fatalf("provider.MaxSecretValueBytes = %d, the server's secrets.MaxValueBytes = %d", provider.MaxSecretValueBytes, secrets.MaxValueBytes)
	}
}

var (
	providerOnce sync.Once
	providerDir  string
	providerErr  error
)

// terraformCLI builds the provider's binary once per test process and
// returns a runner of the terraform CLI in a directory, with a CLI
// configuration whose dev_overrides point slessio/sless at that binary (no
// terraform init); a failed command fails the test.
func terraformCLI(t *testing.T) func(dir string, args ...string) string {
	t.Helper()
	providerOnce.Do(func() {
		providerDir, providerErr = os.MkdirTemp("", "sless-provider-")
		if providerErr != nil {
			return
		}
		root, err := filepath.Abs(moduleRoot)
		if err != nil {
			providerErr = err
			return
		}
		cmd := exec.Command("go", "build", "-o", filepath.Join(providerDir, "terraform-provider-sless"), ".")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			providerErr = fmt.Errorf("go build the provider: %v\n%s", err, out)
		}
	})
	if providerErr != nil {
		t.Fatal(providerErr)
	}
	rc := filepath.Join(t.TempDir(), "terraformrc")
	overrides := fmt.Sprintf("provider_installation {\n  dev_overrides {\n    %q = %q\n  }\n  direct {}\n}\n", "slessio/sless", providerDir)
	if err := os.WriteFile(rc, []byte(overrides), 0o644); err != nil {
		t.Fatal(err)
	}
	return func(dir string, args ...string) string {
		t.Helper()
		cmd := exec.Command(os.Getenv("TF_ACC_TERRAFORM_PATH"), args...)
		cmd.Dir = dir
		cmd.Env = append(slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "TF_") }),
			"TF_CLI_CONFIG_FILE="+rc, "TF_IN_AUTOMATION=1", "CHECKPOINT_DISABLE=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("terraform %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
}
