import os


def handle(event):
    # A real function would connect to its database here (PGHOST, PGUSER, ...
    # from env_vars) and run CREATE TABLE IF NOT EXISTS.
    table = os.environ.get("TABLE", "items")
    rows = int(event.get("rows", 3))
    print("preparing", table, "with", rows, "rows")
    return {"table": table, "rows": rows}
