data "sless_function" "hello" {
  name = "hello"
}

output "hello_phase" {
  value = data.sless_function.hello.phase
}

output "hello_async_retries" {
  value = data.sless_function.hello.async.max_retries
}

output "hello_min_instances" {
  value = data.sless_function.hello.min_instances
}
