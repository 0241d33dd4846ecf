# A secret is imported by its name. Its value cannot be read back, so the
# first apply after the import sets the configured value again.
terraform import sless_secret.db_password db-password
