# The pattern of the prototype's users: a job that prepares a table, a reader
# function behind an HTTP trigger, and an output with its URL.
#
#   export SLESS_ENDPOINT=http://localhost:8080 SLESS_TOKEN=...   # printed by `go tool task dev`
#   terraform apply
#   curl -s -d '{"limit": 2}' "$(terraform output -raw reader_url)"

terraform {
  required_providers {
    sless = {
      source = "slessio/sless"
    }
  }
}

# endpoint and token come from SLESS_ENDPOINT and SLESS_TOKEN; the namespace
# is the token's user's.
provider "sless" {}

variable "table" {
  type    = string
  default = "items"
}

resource "sless_function" "setup" {
  name        = "table-setup"
  runtime     = "python3.11"
  entrypoint  = "handler.handle"
  source_dir  = "${path.module}/functions/setup"
  timeout_sec = 60
  env_vars = {
    TABLE = var.table
  }
}

# Runs once on the first apply; raise run_id to run it again.
resource "sless_job" "prepare" {
  name       = "prepare-table"
  function   = sless_function.setup.name
  event_json = jsonencode({ rows = 3 })
  run_id     = 1
}

resource "sless_function" "reader" {
  name       = "table-reader"
  runtime    = "python3.11"
  source_dir = "${path.module}/functions/reader"
  memory_mb  = 128
  env_vars = {
    TABLE = var.table
  }
}

resource "sless_trigger" "reader_http" {
  name     = "table-reader-http"
  type     = "http"
  function = sless_function.reader.name
}

resource "sless_trigger" "nightly_setup" {
  name     = "table-setup-nightly"
  type     = "cron"
  function = sless_function.setup.name
  schedule = "0 3 * * *"
  enabled  = false # switch on to prepare the table every night
}

output "reader_url" {
  value = sless_trigger.reader_http.url
}

output "prepared" {
  value = sless_job.prepare.message
}
