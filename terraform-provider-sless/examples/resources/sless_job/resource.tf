# Runs once when created with run_id 1; raise run_id to run it again. Apply
# waits for the run and fails when the function fails.
resource "sless_job" "migrate" {
  name       = "migrate"
  function   = sless_function.hello.name
  event_json = jsonencode({ step = "create-tables" })
  run_id     = 1
}

output "migrate_result" {
  value = sless_job.migrate.message
}
