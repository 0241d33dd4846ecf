resource "sless_trigger" "web" {
  name     = "hello-http"
  type     = "http"
  function = sless_function.hello.name
}

resource "sless_trigger" "every_five_minutes" {
  name     = "hello-cron"
  type     = "cron"
  function = sless_function.hello.name
  schedule = "*/5 * * * *"
  enabled  = true
}

output "hello_url" {
  value = sless_trigger.web.url
}
