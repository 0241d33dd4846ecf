import os


def handle(event):
    table = os.environ.get("TABLE", "items")
    limit = int(event.get("limit", 10))
    rows = [{"id": i, "name": "%s-%d" % (table, i)} for i in range(1, 4)]
    return {"table": table, "rows": rows[:limit]}
