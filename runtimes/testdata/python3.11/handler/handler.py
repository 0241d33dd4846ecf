"""Sample function of the runtime conformance suite: one case per path (event["_path"]).

Its twins in ../../nodejs20/handler and ../../go1.23/handler behave the same.
"""
import logging
import os
import sys
import time

if os.environ.get("SAMPLE_FAIL_LOAD"):
    raise RuntimeError("load failed on purpose")
time.sleep(int(os.environ.get("SAMPLE_LOAD_DELAY_MS", "0")) / 1000)
print("sample loaded")

# A logger made at load time, writing to stdout: its output must still be captured.
_logger = logging.getLogger("sample")
_logger.addHandler(logging.StreamHandler(sys.stdout))
_logger.setLevel(logging.INFO)
_logger.propagate = False


def _raise(event):
    raise ValueError("boom")


def _explode():
    raise RuntimeError("kaboom")


def _log(event):
    ident = event["_query"]["id"]
    print(f"start {ident}")
    time.sleep(0.05)  # let the other requests interleave
    _logger.info(f"middle {ident}")
    print(f"end {ident}", file=sys.stderr)
    return {"id": ident}


def _big_log(event):
    for i in range(2000):
        print("é" * 30 + f" {i}")
    return "printed"


CASES = {
    "/": lambda e: {"ok": True},
    "/echo": lambda e: e,
    "/size": lambda e: {"length": len(e.get("body", ""))},
    "/list": lambda e: [1, "two", None],
    "/number": lambda e: 42,
    "/bool": lambda e: True,
    "/null": lambda e: None,
    "/html": lambda e: "  <h1>hi</h1>",
    "/text": lambda e: "héllo ✓",
    "/status": lambda e: {"statusCode": 201, "headers": {"X-Custom": "yes"}, "body": {"created": True}},
    "/status-text": lambda e: {"statusCode": 404, "body": "not here"},
    "/status-ctype": lambda e: {"statusCode": 200, "headers": {"Content-Type": "text/csv"}, "body": "a,b\n"},
    "/raise": _raise,
    "/panic": lambda e: _explode(),
    "/log": _log,
    "/big-log": _big_log,
    "/sleep": lambda e: time.sleep(30),
}


def handle(event):
    path = event.get("_path", "/")
    if path == "/job":
        print("partial", end="")
        return {"event": event, "done": True}
    return CASES[path](event)
