terraform {
  required_providers {
    sless = {
      source = "slessio/sless"
    }
  }
}

# Both settings may come from SLESS_ENDPOINT and SLESS_TOKEN instead. The
# namespace is the token's user's: it is ensured when the provider starts.
provider "sless" {
  endpoint = "http://localhost:8080"
  token    = var.sless_token
}

variable "sless_token" {
  type      = string
  sensitive = true
}
