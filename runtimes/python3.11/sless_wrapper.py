"""sless Python runtime wrapper: serves a user function over HTTP, or runs it once as a job.

This file sits next to the folder ``function/`` that holds the user's code (``/app`` and
``/app/function`` in the image). The contract (environment, event, response, logs) is
documented in runtimes/doc.go; this file and its Node.js and Go siblings implement the
same behaviour and are tested by one conformance suite.

Environment: PORT (8080), SLESS_HOST (all interfaces), SLESS_LISTEN_FD (an inherited,
already-listening stream socket to serve on instead of binding SLESS_HOST:PORT),
SLESS_ENTRYPOINT (module.function, required), SLESS_MODE (server | job | check | pool), SLESS_EVENT
(job input, JSON object), SLESS_TIMEOUT_SEC (job time limit; exit 124 when it passes),
SLESS_CONTROL_FD (pool mode: the socket its function comes on; runtimes/pool.go).
"""

import atexit
import base64
import contextvars
import http.server
import importlib
import json
import os
import re
import signal
import socket
import socketserver
import sys
import threading
import time
import traceback
import urllib.parse

HEALTH_PATH = "/_sless/health"
LOG_HEADER = "X-Sless-Log"
LOG_CAP = 16 * 1024
LOG_MARKER = b"\n[sless: log truncated]\n"
JSON_TYPE = "application/json"
HTML_TYPE = "text/html; charset=utf-8"
TEXT_TYPE = "text/plain; charset=utf-8"
FUNCTION_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "function")

# Headers the wrapper computes itself; a function's own values for them are dropped.
RESERVED_HEADERS = {"content-length", "transfer-encoding", "connection", LOG_HEADER.lower()}
TOKEN = re.compile(r"^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$")
JSON_OBJECT_START = re.compile(rb"[ \t\r\n]*\{")
FD_NUMBER = re.compile(r"[0-9]+")

# The capture of the invocation running in the current thread (or asyncio task), if any.
_capture = contextvars.ContextVar("sless_capture", default=None)
_function = None  # the user's function once loaded; health answers 503 until then
_busy = 0  # requests being answered, under _idle
_idle = threading.Condition()


class _Capture:
    """The output of one invocation, kept up to LOG_CAP bytes of UTF-8."""

    __slots__ = ("data", "over")

    def __init__(self):
        self.data = bytearray()
        self.over = False

    def write(self, text):
        if self.over:
            return
        chunk = text.encode("utf-8", "replace")
        room = LOG_CAP - len(self.data)
        if len(chunk) > room:
            self.data += chunk[:room]
            self.over = True
        else:
            self.data += chunk

    def header(self):
        """Returns the X-Sless-Log value, or None when the invocation printed nothing."""
        data = bytes(self.data)
        if self.over:
            cut = LOG_CAP - len(LOG_MARKER)
            while cut > 0 and data[cut] & 0xC0 == 0x80:  # never split a character
                cut -= 1
            data = data[:cut] + LOG_MARKER
        return base64.b64encode(data).decode("ascii") if data else None


class _Stream:
    """Stands in for sys.stdout and sys.stderr.

    Inside an invocation, writes go to that invocation's capture; outside, to the real
    stream. Installed before the user's module is imported, so loggers and handlers
    created at import time write through it too.
    """

    def __init__(self, real):
        self._real = real
        self.at_line_start = True  # whether real output ends a line (job mode)

    def write(self, text):
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        capture = _capture.get()
        if capture is not None:
            capture.write(text)
            return len(text)
        if text:
            self.at_line_start = text.endswith("\n")
        return self._real.write(text)

    def writelines(self, lines):
        for line in lines:
            self.write(line)

    def flush(self):
        if _capture.get() is None:
            self._real.flush()

    def __getattr__(self, name):
        return getattr(self._real, name)


class _ModuleMissing(Exception):
    """The module the entrypoint names is nowhere (rather than a module it imports)."""


def _load(entrypoint):
    """Imports the user's module and returns the function named by the entrypoint."""
    module_name, _, function_name = entrypoint.rpartition(".")
    if not module_name or not function_name:
        raise ValueError(f"SLESS_ENTRYPOINT must be module.function, got {entrypoint!r}")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        # The entrypoint's module itself, or a package on its path; a module the
        # user's code imports has another name and stays a ModuleNotFoundError.
        if exc.name is None or not (module_name == exc.name or module_name.startswith(exc.name + ".")):
            raise
        path = module_name.replace(".", "/")
        raise _ModuleMissing(f"{path}.py (or a {path}/ package) is not in the function's folder") from None
    function = getattr(module, function_name, None)
    if not callable(function):
        raise AttributeError(f"module {module_name!r} has no function {function_name!r}")
    return function


def _traceback(exc):
    """Formats exc like Python does, without the frames of this wrapper and importlib."""
    report = traceback.TracebackException.from_exception(exc)
    for te in (report, report.__cause__, report.__context__):
        if te is not None:
            te.stack = traceback.StackSummary.from_list(
                [f for f in te.stack if f.filename != __file__ and "importlib" not in f.filename])
    return "".join(report.format())


def _fail_load(entrypoint, exc):
    """Reports a load failure on stderr, summary line first, and ends the process.
    A missing module is that line alone (the build's check reads it)."""
    if isinstance(exc, _ModuleMissing):
        sys.__stderr__.write(f"sless: cannot load {entrypoint}: {exc}\n")
    else:
        sys.__stderr__.write(f"sless: cannot load {entrypoint}: {type(exc).__name__}: {exc}\n{_traceback(exc)}")
    sys.__stderr__.flush()
    os._exit(1)


def _event(method, path, query, headers, raw):
    """Builds the event of one request: a JSON object body, or {"body": text}
    (a body that is not UTF-8: {"body": base64, "_body_base64": True}), plus _ keys."""
    event = None
    if JSON_OBJECT_START.match(raw):
        try:
            parsed = json.loads(raw)
        except ValueError:
            parsed = None
        if isinstance(parsed, dict):
            event = parsed
    if event is None:
        event = {}
        if raw:
            try:
                event = {"body": raw.decode("utf-8")}
            except UnicodeDecodeError:
                event = {"body": base64.b64encode(raw).decode("ascii"), "_body_base64": True}
    names = {}
    for name, value in headers.items():
        name = name.lower()
        names[name] = f"{names[name]}, {value}" if name in names else value
    params = urllib.parse.parse_qs(query, keep_blank_values=True)
    event["_method"] = method
    event["_path"] = path
    event["_query"] = {k: v[0] if len(v) == 1 else v for k, v in params.items()}
    event["_headers"] = names
    event["_accept"] = names.get("accept", "")
    return event


def _encode(value):
    """Returns the content type and bytes of a plain return value."""
    if isinstance(value, str):
        return (HTML_TYPE if value.lstrip().startswith("<") else TEXT_TYPE), value.encode("utf-8")
    text = json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    return JSON_TYPE, text.encode("utf-8")


def _header_value(value):
    if isinstance(value, bool):
        value = "true" if value else "false"
    value = str(value)
    if "\r" in value or "\n" in value:
        raise ValueError(f"header value {value!r} contains a line break")
    return value


def _render(result):
    """Turns a return value into (status, [(name, value)], body)."""
    if not (isinstance(result, dict) and "statusCode" in result):
        content_type, body = _encode(result)
        return 200, [("Content-Type", content_type)], body
    status = result["statusCode"]
    if type(status) is not int or not 100 <= status <= 599:
        raise ValueError(f"statusCode must be an integer from 100 to 599, got {status!r}")
    headers = []
    for name, value in (result.get("headers") or {}).items():
        name = str(name)
        if not TOKEN.match(name):
            raise ValueError(f"invalid header name {name!r}")
        if name.lower() in RESERVED_HEADERS:
            continue
        for item in value if isinstance(value, list) else [value]:
            headers.append((name, _header_value(item)))
    if result.get("body") is None:
        return status, headers, b""
    content_type, body = _encode(result["body"])
    if not any(name.lower() == "content-type" for name, _ in headers):
        headers.append(("Content-Type", content_type))
    return status, headers, body


def _failure(exc):
    body = json.dumps({"error": str(exc), "type": type(exc).__name__}, ensure_ascii=False)
    return 500, [("Content-Type", JSON_TYPE)], body.encode("utf-8")


def _read_chunked(rfile):
    parts = []
    while True:
        size = int(rfile.readline(65537).split(b";", 1)[0].strip(), 16)
        if size == 0:
            while rfile.readline(65537) not in (b"\r\n", b"\n", b""):  # trailers
                pass
            return b"".join(parts)
        data = rfile.read(size)
        if len(data) != size:
            raise ValueError("chunked body ended early")
        parts.append(data)
        rfile.readline(65537)


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: the proxy reuses connections
    disable_nagle_algorithm = True  # headers and body are two writes
    server_version = "sless-python"

    def setup(self):
        # TCP_NODELAY fails on a Unix socket (SLESS_LISTEN_FD), and Nagle does not apply there.
        self.disable_nagle_algorithm = self.request.family != socket.AF_UNIX
        super().setup()

    def address_string(self):
        # A Unix socket's peer has no (host, port); the proxy's X-Forwarded-For names the client.
        return self.client_address[0] if isinstance(self.client_address, tuple) else "unix"

    def log_message(self, format, *args):
        pass  # the proxy records every invocation; access lines would only be noise

    def _send(self, status, headers, body):
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _read_body(self):
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            return _read_chunked(self.rfile)
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length > 0 else b""
        if len(body) != max(length, 0):
            raise ValueError("body shorter than Content-Length")
        return body

    def _serve(self):
        global _busy
        with _idle:
            _busy += 1
        try:
            self._answer()
        finally:
            with _idle:
                _busy -= 1
                _idle.notify_all()

    def _answer(self):
        path, _, query = self.path.partition("?")
        function = _function
        if path == HEALTH_PATH or function is None:
            status, body = (200, b'{"status":"ok"}') if function else (503, b'{"status":"loading"}')
            self.close_connection = function is None  # the unread body would spoil the next request
            return self._send(status, [("Content-Type", JSON_TYPE)], body)
        try:
            raw = self._read_body()
        except (ValueError, OSError):
            self.close_connection = True
            return self._send(400, [("Content-Type", JSON_TYPE)], b'{"error":"unreadable request body","type":"BadRequest"}')
        event = _event(self.command, path, query, self.headers, raw)
        capture = _Capture()
        token = _capture.set(capture)
        try:
            try:
                status, headers, body = _render(function(event))
            except Exception as exc:
                sys.stderr.write(_traceback(exc))  # into the capture: the caller never sees it
                status, headers, body = _failure(exc)
        finally:
            _capture.reset(token)
        log = capture.header()
        if log:
            headers.append((LOG_HEADER, log))
        self._send(status, headers, body)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = _serve


class _Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True

    def __init__(self, address, handler, sock=None):
        if sock is None:
            super().__init__(address, handler)
            return
        # An inherited socket is listening already: binding or listening again is not
        # this process's to do (it may have no network to bind in at all).
        socketserver.BaseServer.__init__(self, sock.getsockname(), handler)
        self.socket = sock
        # A Unix socket's address is a path, not (host, port).
        host_port = self.server_address if isinstance(self.server_address, tuple) else ("localhost", 0)
        self.server_name, self.server_port = host_port[:2]

    def handle_error(self, request, client_address):
        # A client that drops a keep-alive connection (health probes, the
        # proxy closing idle connections) is not an error worth a traceback.
        if isinstance(sys.exc_info()[1], (ConnectionResetError, BrokenPipeError)):
            return
        super().handle_error(request, client_address)
    request_queue_size = 128

    def server_bind(self):
        # HTTPServer.server_bind resolves the host name, which can stall on DNS.
        socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = self.server_address[:2]


def _inherited_socket(fd):
    """Returns the listening stream socket on descriptor fd; family and type are its own."""
    sock = socket.socket(fileno=fd)
    if sock.type != socket.SOCK_STREAM or not sock.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN):
        raise ValueError("not a listening stream socket")
    sock.set_inheritable(False)  # the function's child processes must not accept on it
    return sock


def _listen():
    """Returns the server: on the inherited socket SLESS_LISTEN_FD when it is set, else
    on a socket bound to SLESS_HOST:PORT. Failures end the process with one line."""
    fd = os.environ.get("SLESS_LISTEN_FD", "")
    if fd:
        if not FD_NUMBER.fullmatch(fd):
            sys.__stderr__.write(f"sless: SLESS_LISTEN_FD must be a file descriptor number, got {fd!r}\n")
            sys.exit(1)
        try:
            return _Server(None, _Handler, sock=_inherited_socket(int(fd)))
        except (OSError, ValueError, OverflowError) as exc:
            sys.__stderr__.write(f"sless: cannot listen on fd {fd}: {exc}\n")
            sys.exit(1)
    address = (os.environ.get("SLESS_HOST", ""), int(os.environ.get("PORT") or 8080))
    try:
        return _Server(address, _Handler)
    except OSError as exc:
        sys.__stderr__.write(f"sless: cannot listen on {address[0]}:{address[1]}: {exc}\n")
        sys.exit(1)


def _serve(entrypoint, load_first=False):
    """Listens first (health answers 503 while loading), then loads the function; with
    load_first (pool mode, where the socket listens already and requests wait in its
    backlog meanwhile) it loads first: the first health check is answered 200 at once."""
    global _function
    # One thread per connection: 8 MiB default stacks would exhaust a small
    # function's memory limit at a few dozen concurrent requests; 2 MiB still
    # holds Python's default recursion limit with room to spare.
    threading.stack_size(2 << 20)
    server = _listen()

    def stop(signum, frame):
        # SIGTERM (a pod or a process being stopped): take no new
        # connections, let the requests in flight finish, exit 0.
        threading.Thread(target=server.shutdown, name="sless-stop", daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    thread = threading.Thread(target=server.serve_forever, name="sless-http", daemon=True)
    if not load_first:
        thread.start()
    try:
        _function = _load(entrypoint)
    except BaseException as exc:
        _fail_load(entrypoint, exc)
    if load_first:
        thread.start()
    thread.join()
    server.server_close()
    with _idle:  # the requests in flight finish (the pod's grace period bounds this)
        _idle.wait_for(lambda: _busy == 0)


def _time_out(seconds):
    os.write(2, f"sless: timed out after {seconds:g} seconds\n".encode())
    os._exit(124)


def _job_event(text):
    if not text.strip():
        return {}
    event = json.loads(text)
    if not isinstance(event, dict):
        raise ValueError("must be a JSON object")
    return event


def _run_job(entrypoint):
    """Calls the function once; its JSON result is the last line of stdout."""
    try:
        timeout = float(os.environ.get("SLESS_TIMEOUT_SEC") or 0)
    except ValueError:
        timeout = 0
    if timeout > 0:
        timer = threading.Timer(timeout, _time_out, (timeout,))
        timer.daemon = True
        timer.start()
    try:
        event = _job_event(os.environ.get("SLESS_EVENT", ""))
    except ValueError as exc:
        sys.stderr.write(f"sless: SLESS_EVENT: {exc}\n")
        sys.exit(1)
    try:
        function = _load(entrypoint)
    except BaseException as exc:
        _fail_load(entrypoint, exc)
    try:
        result = json.dumps(function(event))
    except Exception as exc:
        sys.stderr.write(_traceback(exc))
        _exit(1)
    if not sys.stdout.at_line_start:
        sys.stdout.write("\n")
    sys.stdout.write(result + "\n")
    _exit(0)


def _exit(code):
    """Ends the job now, like the Node.js and Go runners: threads the function left
    running must not hold the job open once its outcome is out."""
    atexit._run_exitfuncs()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def _check(entrypoint):
    """Loads the entrypoint as the server and the job runner would, and exits:
    0 when it resolves, 1 with the load error (the build's check)."""
    try:
        _load(entrypoint)
    except BaseException as exc:  # noqa: BLE001 - any failure to load is the user's
        _fail_load(entrypoint, exc)
    sys.stdout.write(f"sless: loaded {entrypoint}\n")
    _exit(0)


def _pool():
    """Waits, warm, for the function it is to serve, then becomes its server: the pool
    mode (runtimes/pool.go). Nothing of the function is in this process before."""
    global FUNCTION_DIR
    import ctypes  # noqa: PLC0415 - pool mode only: to drop the bounding set

    fd = os.environ.get("SLESS_CONTROL_FD", "")
    if not FD_NUMBER.fullmatch(fd):
        _fatal(f"SLESS_CONTROL_FD must be a file descriptor number, got {fd!r}")
    libc = ctypes.CDLL(None, use_errno=True)
    with socket.socket(fileno=int(fd)) as ctl:
        ctl.sendall(b"ready\n")
        with ctl.makefile("rb") as reader:
            line = reader.readline()
    if not line:
        os._exit(0)  # the platform let it go
    spec = json.loads(line)
    _become(libc, ctypes, spec["uid"], spec["gid"])
    env = dict(kv.split("=", 1) for kv in spec["env"] if "=" in kv)
    os.environ.clear()
    os.environ.update(env)
    time.tzset()
    FUNCTION_DIR = spec["dir"]
    os.chdir(FUNCTION_DIR)
    sys.path[0] = FUNCTION_DIR
    sys.path[1:1] = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    _serve(env.get("SLESS_ENTRYPOINT", ""), load_first=True)


def _become(libc, ctypes, uid, gid):
    """Switches to uid and gid for good: no groups, no capability in any set (the
    bounding set first, while CAP_SETPCAP allows it), checked in /proc."""
    if uid < 0:
        return  # every tenant has the platform's uid here
    pr_capbset_drop = 24
    for cap in range(64):
        if libc.prctl(pr_capbset_drop, cap, 0, 0, 0) != 0 and ctypes.get_errno() != 22:  # EINVAL: past the last
            _fatal(f"drop capability {cap} from the bounding set: {os.strerror(ctypes.get_errno())}")
    try:
        os.setgroups([])
        os.setresgid(gid, gid, gid)
        os.setresuid(uid, uid, uid)
    except OSError as exc:
        _fatal(f"switch to uid {uid}: {exc}")
    want = {"Uid": f"{uid}\t{uid}\t{uid}\t{uid}", "Gid": f"{gid}\t{gid}\t{gid}\t{gid}", "Groups": "",
            "NoNewPrivs": "1", "CapInh": "0" * 16, "CapPrm": "0" * 16, "CapEff": "0" * 16, "CapBnd": "0" * 16,
            "CapAmb": "0" * 16}
    for task in os.listdir("/proc/self/task"):
        with open(f"/proc/self/task/{task}/status") as f:
            status = dict(line.rstrip("\n").split(":\t", 1) for line in f if ":\t" in line)
        for name, value in want.items():
            if status.get(name, "").strip() != value:
                _fatal(f"still {name} {status.get(name)!r} after the switch to uid {uid}")


def _fatal(message):
    sys.__stderr__.write(f"sless: {message}\n")
    sys.__stderr__.flush()
    os._exit(1)


def main():
    sys.stdout = _Stream(sys.stdout)
    sys.stderr = _Stream(sys.stderr)
    sys.path[0] = FUNCTION_DIR  # the user's modules, not this file's folder
    entrypoint = os.environ.get("SLESS_ENTRYPOINT", "")
    mode = os.environ.get("SLESS_MODE") or "server"
    # As the first process of a container (PID 1) Python would ignore
    # SIGTERM, leaving a stopped pod to wait for its grace period and a kill.
    signal.signal(signal.SIGTERM, lambda signum, frame: os._exit(128 + signum))
    if mode == "server":
        _serve(entrypoint)
    elif mode == "job":
        _run_job(entrypoint)
    elif mode == "check":
        _check(entrypoint)
    elif mode == "pool":
        _pool()
    else:
        sys.stderr.write(f"sless: SLESS_MODE must be server, job, check or pool, got {mode!r}\n")
        sys.exit(2)


if __name__ == "__main__":
    main()
