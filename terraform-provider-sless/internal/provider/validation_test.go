package provider_test

import (
	"fmt"
	"regexp"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"

	"github.com/slessio/sless/httpapi/auth"
)

// TestAccPlanValidation: what the server would refuse fails at plan, with
// the attribute named, before anything is created; a token the server does
// not accept fails plan with one clear line.
func TestAccPlanValidation(t *testing.T) {
	t.Parallel()
	p := startPlatform(t)
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"handler.py": handler("x")})
	fn := func(attrs string) string {
		return p.providerBlock() + fmt.Sprintf(`
resource "sless_function" "f" {
  source_dir = %q
  %s
}
`, dir, attrs)
	}
	trigger := func(attrs string) string {
		return p.providerBlock() + `
resource "sless_trigger" "t" {
  name     = "tick"
  function = "f"
  ` + attrs + `
}
`
	}
	secret := func(attrs string) string {
		return p.providerBlock() + `
resource "sless_secret" "s" {
  ` + attrs + `
}
`
	}
	forged, err := auth.Mint([]byte("0123456789abcdef0123456789abcdef"), "mallory", time.Hour, nil)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, config string
		want         string
	}{
		{"runtime", fn(`name = "f"
  runtime = "cobol85"`), `(?s)Invalid runtime.*cobol85`},
		{"name", fn(`name = "Bad_Name"
  runtime = "python3.11"`), `(?s)Invalid name`},
		{"memory", fn(`name = "f"
  runtime = "python3.11"
  memory_mb = 1000000`), `(?s)memory_mb must be between 64 and 4096`},
		{"timeout", fn(`name = "f"
  runtime = "python3.11"
  timeout_sec = 0`), `(?s)timeout_sec must be between 1 and 900`},
		{"entrypoint", fn(`name = "f"
  runtime = "python3.11"
  entrypoint = "no-dot"`), `(?s)Invalid entrypoint`},
		{"env", fn(`name = "f"
  runtime = "python3.11"
  env_vars = { "1BAD" = "x" }`), `(?s)Invalid env_vars`},
		{"both code settings", fn(`name = "f"
  runtime = "python3.11"
  code_path = "x.zip"`), `(?s)Exactly one of source_dir and code_path`},
		{"code_hash with source_dir", fn(`name = "f"
  runtime = "python3.11"
  code_hash = "abc"`), `(?s)code_hash is computed from source_dir`},
		{"async max_retries", fn(`name = "f"
  runtime = "python3.11"
  async = { max_retries = -1 }`), `(?s)Invalid async.max_retries.*async.max_retries must be between 0 and 10`},
		{"async max_event_age_sec", fn(`name = "f"
  runtime = "python3.11"
  async = { max_event_age_sec = 59 }`), `(?s)Invalid async.max_event_age_sec.*async.max_event_age_sec must be between 60 and 21600`},
		{"async max_concurrency", fn(`name = "f"
  runtime = "python3.11"
  async = { max_concurrency = 10001 }`), `(?s)Invalid async.max_concurrency.*async.max_concurrency must be between 0 and 10000`},
		{"min_instances", fn(`name = "f"
  runtime = "python3.11"
  min_instances = -1`), `(?s)Invalid min_instances.*min_instances must be between 0 and 1000`},
		{"max_instances", fn(`name = "f"
  runtime = "python3.11"
  max_instances = 1001`), `(?s)Invalid max_instances.*max_instances must be between 0 and 1000`},
		{"concurrency", fn(`name = "f"
  runtime = "python3.11"
  concurrency = 1001`), `(?s)Invalid concurrency.*concurrency must be between 0 and 1000`},
		{"min_instances over max_instances", fn(`name = "f"
  runtime = "python3.11"
  min_instances = 3
  max_instances = 2`), `(?s)Invalid min_instances.*min_instances: 3 is more than max_instances \(2\)`},
		{"async written as a block", fn(`name = "f"
  runtime = "python3.11"
  async {
    max_retries = 1
  }`), `(?s)Did you mean to define argument\s+"async"\? If so, use the equals sign`},
		{"secrets variable name", fn(`name = "f"
  runtime = "python3.11"
  secrets = { "1BAD" = "db" }`), `(?s)Invalid secrets.*variable name "1BAD" must match`},
		{"secrets secret name", fn(`name = "f"
  runtime = "python3.11"
  secrets = { DB = "Bad_Name" }`), `(?s)Invalid secrets\["DB"\].*"Bad_Name" must consist of lower-case letters`},
		{"secrets and env_vars", fn(`name = "f"
  runtime = "python3.11"
  env_vars = { DB = "x" }
  secrets = { DB = "db" }`), `(?s)Invalid secrets.*variable "DB" is also set in env_vars`},
		{"secret_files name", fn(`name = "f"
  runtime = "python3.11"
  secret_files = ["Bad_Name"]`), `(?s)Invalid secret_files.*"Bad_Name" must consist of lower-case letters`},
		{"secret name", secret(`name = "Bad_Name"
  value = "x"`), `(?s)Invalid name`},
		{"secret value too large", secret(`name = "db"
  value = "${join("", [for i in range(1024) : format("%064d", i)])}x"`), `(?s)Invalid value.*65537 bytes, over the limit of 64 KiB`},
		{"cron syntax", trigger(`type = "cron"
  schedule = "every minute"`), `(?s)Invalid schedule`},
		{"cron without schedule", trigger(`type = "cron"`), `(?s)A cron trigger needs a schedule`},
		{"cron with spaces around", trigger(`type = "cron"
  schedule = " */5 * * * *"`), `(?s)Invalid schedule.*must not begin or end with spaces`},
		{"trigger type", trigger(`type = "webhook"`), `(?s)Invalid type`},
		{"rejected token", replaceOnce(fn(`name = "f"
  runtime = "python3.11"`), p.Token, forged), `the sless API rejected the token \(401\): `},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resource.Test(t, resource.TestCase{
				ProtoV6ProviderFactories: providers,
				Steps:                    []resource.TestStep{{Config: c.config, PlanOnly: true, ExpectError: regexp.MustCompile(c.want)}},
			})
		})
	}
	if fns, err := p.Client.ListFunctions(ctx); err != nil || len(fns) != 0 {
		t.Fatalf("functions after refused plans: %v (%v)", fns, err)
	}
	if ss, err := p.Client.ListSecrets(ctx); err != nil || len(ss) != 0 {
		t.Fatalf("secrets after refused plans: %v (%v)", ss, err)
	}
}
