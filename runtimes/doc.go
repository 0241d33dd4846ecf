// Package runtimes owns the code that wraps a user's function: one wrapper per
// language (python3.11/, nodejs20/, go1.23/), each with the base-image Dockerfile,
// embedded into the sless binary, and the small Go API drivers use to install,
// build and start it. It imports the standard library and domain only.
//
// # Install layout
//
// A driver unpacks the user's code into DIR/function/ and calls Install(DIR,
// entrypoint), which mirrors the image layout (/app, /app/function):
//
//	python3.11  DIR/sless_wrapper.py                 run: python -u DIR/sless_wrapper.py
//	nodejs20    DIR/sless_wrapper.js                 run: node DIR/sless_wrapper.js
//	go1.23      DIR/function/sless_*.go (+ go.mod)   build: go build -o DIR/sless-fn; run: DIR/sless-fn
//
// Build then compiles Go (readable compiler output in the EUNPROCESSABLE error; an
// entrypoint that is missing or of the wrong kind, files that are not package main
// or a func main of their own are said in the user's terms, not in the compiler's
// about the generated files), runs
// npm ci (with a package-lock.json) or npm install, --omit=dev --ignore-scripts unless
// SLESS_NPM_ALLOW_SCRIPTS=true, when package.json declares dependencies, and for Python runs
// pip install --target DIR/python-deps -r requirements.txt when the file lists
// anything (DIR/python-deps is then on PYTHONPATH; the index is the operator's
// SLESS_PIP_INDEX_URL and SLESS_PIP_EXTRA_INDEX_URL). With BuildOptions.DepsCache the
// installed dependencies (python-deps, node_modules) are kept by the digest of the
// dependency files and the files of the zip they point to, and copied into the next
// version with the same ones instead of a second install. Command returns the program,
// arguments, working directory (DIR/function) and base environment of a process;
// interpreters are resolved to real paths once per process, because python3 on PATH
// may be a pyenv shim costing ~100 ms per start.
//
// # Process contract (the same for all three wrappers)
//
// Environment (the names are the Env* constants, which both drivers use): PORT
// (default 8080); SLESS_HOST (default all interfaces; Command sets 127.0.0.1);
// SLESS_LISTEN_FD, an inherited listening socket to serve on instead (below);
// SLESS_ENTRYPOINT, module.function, which the caller must set for Python and Node.js
// (a process without it fails to load) and Go ignores, as Install compiles the
// exported function name in; SLESS_MODE, server (default), job, or check (load the
// entrypoint and exit: 0 when it resolves, 1 with the load error; the build runs it);
// SLESS_EVENT, the job's input, a JSON object (empty means {}); SLESS_TIMEOUT_SEC, the
// job's time limit. Python and Node.js also have a pool mode, pool, for a driver's warm
// pool: the process starts without a function and is given one on its control socket,
// SLESS_CONTROL_FD (pool.go has the protocol).
//
// SLESS_LISTEN_FD, when not empty, is the decimal number of a file descriptor the
// process inherits (say 3) that holds an already-listening stream socket, Unix or TCP.
// Server mode then serves HTTP on it, ignores SLESS_HOST and PORT, and binds and
// listens on nothing itself: the local driver creates a Unix socket in a directory only
// it can reach and passes it to a process that runs in its own network namespace,
// where no port of the host reaches it (Kubernetes pods keep PORT). A value that is not
// a number, or a descriptor that is not a listening stream socket, ends the process
// non-zero with one line "sless: ..." on stderr, as a port it cannot listen on does
// (Node.js, which cannot ask a socket whether it listens, calls listen(2) on it again:
// a bound socket that is not yet listening is served, an unbound TCP one would get an
// ephemeral port). The wrappers keep the descriptor from the function's child
// processes. A request over a Unix socket has no peer address: the proxy's
// X-Forwarded-For names the client. Job and check modes ignore SLESS_LISTEN_FD.
//
// Server mode listens first and answers 503 on every path, /_sless/health included,
// while the user code loads; then /_sless/health answers 200. (Node.js: a synchronous
// require holds the event loop, so requests wait for the load instead; Go: package
// init runs before the server listens.) If loading fails (syntax error, exception at
// import, missing entrypoint, Go init panic) the process exits non-zero with a
// one-line summary and the traceback on stderr; for Go, compile errors and a missing
// entrypoint fail Build instead. When the module the entrypoint names is not there
// at all (handler.py or a handler/ package, handler.js or handler.mjs), rather than
// a module it imports, the summary is the one line "sless: cannot load ENTRYPOINT:
// FILES is not in the function's folder", which the build's check turns into a
// message naming the files and listing the upload's top-level ones.
//
// A request becomes the event: a JSON object body as parsed, any other body as
// {"body": "<text>"}, no body as {}, plus _method, _path (the raw request path),
// _query (repeated keys as a list), _headers (lower-case names, repeated headers
// joined with ", ") and _accept. These keys replace body keys of the same name.
// Bodies are read by Content-Length or chunked.
//
// The return value becomes the response: a string starting (after white space) with
// "<" is text/html; charset=utf-8, any other string text/plain; charset=utf-8,
// anything else JSON (application/json). A map with "statusCode" (integer 100–599)
// sets the response itself: "headers" (values may be lists), "body" (encoded as above,
// none when absent or null); its own Content-Type wins. An exception (Go: a returned
// error or a panic) answers 500 {"error": message, "type": type} — Python's class
// name, the JavaScript constructor name, Go's %T of the error or "panic" — and the
// traceback (Go: "error: message", or a panic's stack) goes to the invocation's log,
// never to the caller.
//
// Job mode calls the entrypoint once with SLESS_EVENT and prints the JSON result as
// the last line of stdout, on a line of its own after whatever the function printed,
// then exits 0 at once (threads, timers or goroutines the function left behind do not
// hold the job open). An exception prints its traceback to stderr and exits 1; an
// invalid SLESS_EVENT exits 1; when SLESS_TIMEOUT_SEC passes the process prints
// "sless: timed out after N seconds" to stderr and exits 124, as timeout(1) does.
// Node.js times out only when its event loop turns: a busy synchronous loop is for the
// driver's own deadline to end.
//
// # Per-invocation logs
//
// What a function prints while it handles a request goes to that request only and
// comes back in the response header X-Sless-Log: base64 of UTF-8, at most 16 KiB
// (LogCap) decoded, cut at a character boundary and ended with LogTruncatedMarker when
// longer; absent when nothing was printed. The proxy strips it and stores it with the
// invocation. Output outside a request (at load time, from a thread the function left
// running) goes to the process's own stdout and stderr. A function that ends the whole
// process (os.Exit, log.Fatal, process.exit) takes its last invocation's log with it;
// the driver sees the exit.
//
//   - Python: sys.stdout and sys.stderr are replaced, before the user module is
//     imported, by a stream that writes to the capture held in a ContextVar, set per
//     request on the request's thread. print, logging handlers (also those created at
//     import) and tracebacks are captured; writes to sys.stdout.buffer or to file
//     descriptors 1 and 2 directly are not.
//   - Node.js: process.stdout.write and process.stderr.write consult an
//     AsyncLocalStorage set per request, which follows the request through awaits and
//     timers; console.* and any logger writing to those streams are captured.
//   - Go: a goroutine has no identity to hang a capture on, and fmt, log, slog handlers
//     made at init and child processes all write to file descriptors 1 and 2. So the
//     wrapper runs invocations one at a time and, for each, points descriptors 1 and 2
//     at a private temporary file (dup2) and reads it back afterwards. This captures
//     everything the function and the goroutines it starts print while it runs, and
//     requests can never mix. The cost is that one process runs one Go invocation at a
//     time (as AWS Lambda does): net/http still accepts and reads requests
//     concurrently, health checks never wait, and throughput for short handlers stays
//     close to a bare server (see BenchmarkWrapper); a handler that waits on I/O holds
//     the others back, so scale such functions out with replicas. Crashes of the whole
//     process are also written to the real stderr (debug.SetCrashOutput), so they are
//     never lost in a capture.
//
// # Images
//
// Each runtime folder's Dockerfile (ImageContext) builds a base image: a non-root
// user (uid 10001), the wrapper in /app, user code expected in /app/function/, CMD in
// server mode on PORT 8080. Runner mode is the same image and command with
// SLESS_MODE=job (plus SLESS_EVENT and SLESS_TIMEOUT_SEC). The go1.23 image carries
// ONBUILD steps that copy the user's code and run the Go build when a function image
// is built FROM it; it takes the entrypoint as the build argument SLESS_ENTRYPOINT
// and, being a build image, carries the Go toolchain (a multi-stage build into a slim
// image is the Kubernetes driver's to choose). Python's and Node.js's dependency
// installs are Dockerfile lines of the function image (Description.ImageSteps,
// before the copy of the code, so their layer stays cached while only the code
// changes), with the operator's registry settings as build arguments (ImageBuildArgs).
//
// # Runtime descriptions
//
// What differs between runtimes lives with the runtime, never in a driver: its
// folder (base image, wrapper) and its Go file (python.go, node.go, golang.go:
// install, build steps, start command, and the Description it registers at init).
// A Description (Describe by name, or Runtime.Description) tells a driver the rest
// of the environment contract: whether the entrypoint is compiled in (then
// processes get no SLESS_ENTRYPOINT and an image build gets it as
// BuildArgEntrypoint), the runtime's memory knob (MemoryEnv: NODE_OPTIONS
// --max-old-space-size, GOMEMLIMIT) and whether its image runs on a read-only
// root. The domain keeps the two facts the API validates with, in one table in
// domain/runtime.go: the runtime's name, its default entrypoint and how an
// entrypoint is spelled (domain imports nothing of the project, and the
// Terraform provider validates with it alone).
//
// # Adding a runtime
//
// A new runtime, say ruby3.3, is:
//
//  1. runtimes/ruby3.3/: Dockerfile (the base image: uid 10001, wrapper in /app,
//     code in /app/function, CMD in server mode on PORT) and the wrapper, named
//     sless_* (embedded by pattern), honouring the process contract above.
//  2. runtimes/ruby.go: the language (install, build, program) and init calling
//     register with its Description.
//  3. One row in domain/runtime.go's runtimeTable (name, default entrypoint,
//     entrypoint syntax) and its Runtime constant.
//  4. Samples: testdata/ruby3.3/ (handler, bare, broken) and a fixture in
//     conformance_test.go here; a sample function and a sampleRuntimes row in
//     driver/drivertest (samples.go), its cases in harness.go, and its
//     predictions in fakeimage.go for harnesses that run nothing.
//
// Then run the conformance suites: go test ./runtimes/ (TestConformance: the
// wrapper against the contract; TestDescriptionsMatchDomain: steps 2 and 3 agree),
// go test ./localdriver/ and go test ./k8sdriver/ (TestConformance in each runs
// driver/drivertest against that driver), and go test ./driver/drivertest/.
// No driver changes: they ask the Description.
package runtimes

// LogCap is the most bytes of decoded log an X-Sless-Log header carries.
const LogCap = 16 << 10

// LogTruncatedMarker ends a log that was cut at LogCap.
const LogTruncatedMarker = "\n[sless: log truncated]\n"
