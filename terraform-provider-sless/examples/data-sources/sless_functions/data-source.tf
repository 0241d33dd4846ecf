data "sless_functions" "all" {}

output "function_names" {
  value = data.sless_functions.all.names
}
