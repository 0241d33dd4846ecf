def handle(event)
    return {"ok": True}
