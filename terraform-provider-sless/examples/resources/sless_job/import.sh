# A job is imported by its name.
terraform import sless_job.migrate migrate
