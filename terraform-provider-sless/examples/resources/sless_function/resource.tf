# From a directory: the provider zips it (sorted entries, fixed timestamps),
# so only a changed file makes a plan.
resource "sless_function" "hello" {
  name       = "hello"
  runtime    = "python3.11"
  entrypoint = "handler.handle"
  source_dir = "${path.module}/hello"
  memory_mb  = 256
  env_vars = {
    GREETING = "hi"
  }
  # Credentials come from namespace secrets (sless_secret), not env_vars:
  # an env var taking a secret's value, and a secret read as the file
  # /run/secrets/tls-key.
  secrets = {
    DB_PASSWORD = sless_secret.db_password.name
  }
  secret_files = [sless_secret.tls_key.name]
  # Scaling: one instance kept running (no cold start; 0, the default,
  # scales to zero when idle), at most 20, each taking 4 requests at once
  # (0: the runtime's default). Like async, these are the function's: a
  # change makes no new version.
  min_instances = 1
  max_instances = 20
  concurrency   = 4
  # Asynchronous invocations (X-Sless-Invocation-Type: async): up to 5
  # retries, given up after an hour, 4 deliveries at once. A field left out
  # takes its default; without async (or after removing it) all are defaults.
  async = {
    max_retries       = 5
    max_event_age_sec = 3600
    max_concurrency   = 4
  }
}

# From a zip built elsewhere.
resource "sless_function" "report" {
  name      = "report"
  runtime   = "nodejs20"
  code_path = "${path.module}/dist/report.zip"
  code_hash = filesha256("${path.module}/dist/report.zip")
}
