#!/usr/bin/env bash
# Measures how long sless dev takes to serve again after `kill -9`, in three
# cases: while it serves an HTTP function, right after an upload (a build in
# flight) and right after a job's 201 (a run in flight). Usage (as in the
# README's Crash recovery section):
#   scripts/crash-recovery.sh [port]
# It builds bin/sless, uses a fresh data dir under a temporary directory and
# prints one line per case: seconds from the restart to the function serving
# (or the build Ready, or the job Succeeded).
set -euo pipefail
cd "$(dirname "$0")/.."
port=${1:-18080}
go build -o bin/sless ./cmd/sless
work=$(mktemp -d)
data=$work/data
base=http://127.0.0.1:$port
pid=
cleanup() {
  [ -n "$pid" ] && kill "$pid" 2>/dev/null
  wait 2>/dev/null || true
  # As root, the private cluster of a data dir the postgres user cannot
  # enter lives under /var/lib/sless (see the README): remove it too.
  for owner in /var/lib/sless/pg-*.owner; do
    [ -f "$owner" ] && [ "$(cat "$owner")" = "$data/postgres" ] && rm -rf "${owner%.owner}" "$owner"
  done
  rm -rf "$work"
}
trap cleanup EXIT

start() {
  bin/sless dev --data-dir "$data" --listen 127.0.0.1:$port >>"$work/sless.log" 2>&1 &
  pid=$!
  until curl -fs $base/readyz >/dev/null 2>&1; do sleep 0.05; done
}
crash() { kill -9 "$pid"; wait "$pid" 2>/dev/null || true; pid=; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }
waitfor() { # waitfor <command...>: until it succeeds, at most 10 minutes
  local deadline=$(( $(date +%s) + 600 ))
  until "$@" >/dev/null 2>&1; do
    [ "$(date +%s)" -lt $deadline ] || { echo "timed out: $*" >&2; tail -30 "$work/sless.log" >&2; exit 1; }
    sleep 0.05
  done
}

start
tok=$(bin/sless token --data-dir "$data" --sub crash 2>/dev/null)
ns=$(bin/sless token --data-dir "$data" --sub crash 2>&1 >/dev/null | sed -n 's/.*namespace: *\(sless-[0-9a-f]*\).*/\1/p')
api=$base/v1/namespaces/$ns
H="Authorization: Bearer $tok"
zipfn() { # zipfn <greeting>: a zip of a Python function answering it
  python3 - "$1" "$work/fn.zip" <<'PY'
import sys, zipfile
with zipfile.ZipFile(sys.argv[2], "w") as z:
    z.writestr("handler.py", "def handle(event):\n    return {'hello': %r}\n" % sys.argv[1])
PY
}
serves() { curl -fs "$base/fn/$ns/hello" | grep -q "$1"; }

curl -fs -X POST -H "$H" "$api/ensure" >/dev/null
curl -fs -X POST -H "$H" -d '{"name":"hello","runtime":"python3.11","retry_safe":true}' "$api/functions" >/dev/null
zipfn one && curl -fs -X POST -H "$H" -F code=@"$work/fn.zip" "$api/functions/hello/upload" >/dev/null
curl -fs -X POST -H "$H" -d '{"name":"web","type":"http","function":"hello"}' "$api/triggers" >/dev/null
waitfor serves one

crash; t=$(now); start
waitfor serves one
echo "kill -9 while serving: the function serves again $(since "$t") s after the restart"

zipfn two && curl -fs -X POST -H "$H" -F code=@"$work/fn.zip" "$api/functions/hello/upload" >/dev/null
crash; t=$(now); start
waitfor serves two
echo "kill -9 right after an upload (202): version 2 serves $(since "$t") s after the restart"

curl -fs -X POST -H "$H" -d '{"name":"once","function":"hello","run_id":1}' "$api/jobs" >/dev/null
crash; t=$(now); start
waitfor sh -c "curl -fs -H '$H' $api/jobs/once | grep -q '\"phase\":\"Succeeded\"'"
echo "kill -9 right after a job's 201: the run succeeded $(since "$t") s after the restart"
