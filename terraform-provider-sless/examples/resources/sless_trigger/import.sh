# A trigger is imported by its name.
terraform import sless_trigger.web hello-http
