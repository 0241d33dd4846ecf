# The value comes from a variable marked sensitive (or a data source of a
# secret manager), never a literal in the configuration. It is never shown
# in plans, but it is stored in the Terraform state: keep the state in an
# encrypted, access-controlled backend.
variable "db_password" {
  type      = string
  sensitive = true
}

resource "sless_secret" "db_password" {
  name  = "db-password"
  value = var.db_password
}

resource "sless_secret" "tls_key" {
  name  = "tls-key"
  value = file("${path.module}/tls/key.pem")
}

# The function gets DB_PASSWORD in its environment and the key as the file
# /run/secrets/tls-key. A new value of a secret makes a new version of the
# function, and apply waits until it serves.
resource "sless_function" "api" {
  name       = "api"
  runtime    = "python3.11"
  source_dir = "${path.module}/api"
  secrets = {
    DB_PASSWORD = sless_secret.db_password.name
  }
  secret_files = [sless_secret.tls_key.name]
}
