package drivertest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/runtimes"
)

// FakeImageForTest is an image built from a build context of one of the
// suite's samples, for harnesses whose platform builds and runs nothing
// (k8sdriver's test cluster: no kubelet, no container runtime, no
// registry). Its methods predict from the sample's code and a container's
// environment what the builder and the containers would do and print, the
// way the runtimes' wrappers behave (runtimes/*), so that such a harness
// writes pod status and container logs as a kubelet would. Everything the
// prediction depends on comes from what the driver made: the build context
// it pointed the builder at, its build arguments, and the container's
// environment (SLESS_MODE, SLESS_EVENT, SLESS_TIMEOUT_SEC,
// SLESS_ENTRYPOINT, PORT and the user's variables).
type FakeImageForTest struct {
	// Runtime is the runtime whose base image the context's Dockerfile names.
	Runtime domain.Runtime
	// Files is the build context: the user's files by name, and the Dockerfile.
	Files map[string]string
	// BuildArgs are the builder's --build-arg values (Go: SLESS_ENTRYPOINT).
	BuildArgs map[string]string
}

// FakeProcessForTest is what one process of a FakeImageForTest does.
type FakeProcessForTest struct {
	// Ready says a server gets healthy on Port (its health path answers 200).
	Ready bool
	Port  string
	// Exits says the process ends by itself, After it started (a server
	// that got ready: after getting ready), with ExitCode; otherwise it runs
	// until it is stopped.
	Exits    bool
	After    time.Duration
	ExitCode int
	// Stdout and Stderr are its output by the time it ends (one that runs
	// on: so far).
	Stdout, Stderr string
}

// sampleKind tells the suite's samples apart by what they do.
type sampleKind int

const (
	kindHello          sampleKind = iota // pythonSample, nodeSample, goSample
	kindCompileError                     // goCompileErrorSample
	kindNodeDependency                   // nodeDependencySample
	kindCrashLoop                        // crashLoopSample
	kindLoadFailure                      // loadFailureSample
)

// fakeSample is a sample of the suite recognised in an image.
type fakeSample struct {
	sample
	kind    sampleKind
	version string
}

// versionLine finds the version the hello samples are generated with.
var versionLine = regexp.MustCompile(`(?m)^(?:const )?(?:VERSION|version) = "([^"\\]*)"$`)

// sample recognises the image's code: it must be exactly the files of one
// of the suite's samples for the image's runtime (plus the Dockerfile).
func (im FakeImageForTest) sample() (fakeSample, error) {
	user := maps.Clone(im.Files)
	delete(user, "Dockerfile")
	version := ""
	for _, name := range slices.Sorted(maps.Keys(user)) {
		if m := versionLine.FindStringSubmatch(user[name]); m != nil {
			version = m[1]
			break
		}
	}
	for _, c := range []fakeSample{
		{pythonSample(version), kindHello, version},
		{nodeSample(version), kindHello, version},
		{goSample(version), kindHello, version},
		{goCompileErrorSample(), kindCompileError, ""},
		{nodeDependencySample(), kindNodeDependency, ""},
		{crashLoopSample(), kindCrashLoop, ""},
		{loadFailureSample(), kindLoadFailure, ""},
	} {
		if c.runtime == im.Runtime && maps.Equal(c.files, user) {
			return c, nil
		}
	}
	return fakeSample{}, domain.Errorf(domain.ENOTFOUND, "drivertest: the %s image holds no sample of the suite (files %v)", im.Runtime, slices.Sorted(maps.Keys(user)))
}

// compileError is what the Go compiler says about the sample, or "": Go
// images compile the entrypoint named by the SLESS_ENTRYPOINT build
// argument (default Handle) into the binary; runtimes that do not compile
// the entrypoint in have no compile step.
func (im FakeImageForTest) compileError(s fakeSample) string {
	if !runtimes.Describe(s.runtime).EntrypointCompiledIn {
		return ""
	}
	entrypoint := im.BuildArgs[runtimes.BuildArgEntrypoint]
	if entrypoint == "" {
		entrypoint = domain.DefaultEntrypoint(s.runtime)
	}
	switch {
	case s.kind == kindCompileError:
		return "./handler.go:7:9: undefined: notDefined"
	case entrypoint != s.entrypoint:
		return "./sless_entrypoint.go:5:38: undefined: " + entrypoint
	}
	return ""
}

// Build predicts the builder's run, with its log in Stderr: exit 0, or exit
// 1 with the compiler's output for a Go compile error or an entrypoint the
// code lacks. It returns ENOTFOUND for an image that is no sample.
func (im FakeImageForTest) Build() (FakeProcessForTest, error) {
	s, err := im.sample()
	if err != nil {
		return FakeProcessForTest{}, err
	}
	log := "INFO Retrieving image manifest of the " + string(im.Runtime) + " base image\nINFO Unpacking rootfs\nINFO COPY . /app/function/\n"
	if s.kind == kindNodeDependency {
		log += "INFO RUN npm install --omit=dev --no-audit --no-fund --no-update-notifier --ignore-scripts\nadded 1 package in 1s\n"
	}
	if msg := im.compileError(s); msg != "" {
		log += "# function\n" + msg + "\nerror building image: error building stage: failed to execute command: waiting for process to exit: exit status 1\n"
		return FakeProcessForTest{Exits: true, ExitCode: 1, Stderr: log}, nil
	}
	return FakeProcessForTest{Exits: true, Stderr: log + "INFO Pushing image\n"}, nil
}

// runnable recognises the sample and checks that it built.
func (im FakeImageForTest) runnable() (fakeSample, error) {
	s, err := im.sample()
	if err != nil {
		return s, err
	}
	if msg := im.compileError(s); msg != "" {
		return s, domain.Errorf(domain.EINVALID, "drivertest: the image did not build: %s", msg)
	}
	return s, nil
}

// loadError is what the wrapper reports when it cannot load the
// function, or "".
func loadError(s fakeSample, env map[string]string) string {
	entrypoint := env[runtimes.EnvEntrypoint]
	switch {
	case s.kind == kindLoadFailure:
		return "sless: cannot load " + entrypoint + ": RuntimeError: cannot load: SAMPLE_SETTING is missing\n" +
			"Traceback (most recent call last):\n  File \"/app/function/handler.py\", line 1, in <module>\n" +
			"    raise RuntimeError(\"cannot load: SAMPLE_SETTING is missing\")\nRuntimeError: cannot load: SAMPLE_SETTING is missing\n"
	case !runtimes.Describe(s.runtime).EntrypointCompiledIn && entrypoint != s.entrypoint:
		return fmt.Sprintf("sless: cannot load %q: the module has no such function (the sample's entrypoint is %s)\n", entrypoint, s.entrypoint)
	}
	return ""
}

// crashAfter is how long the crash-loop sample lives once loaded.
func crashAfter(env map[string]string) time.Duration {
	ms, err := strconv.Atoi(env["SAMPLE_CRASH_AFTER_MS"])
	if err != nil {
		ms = 500
	}
	return time.Duration(ms) * time.Millisecond
}

// Server predicts a server-mode container: it listens on PORT (default
// 8080), loads the function and gets ready, or exits 1 with the load error
// on stderr; the crash-loop sample exits 3 SAMPLE_CRASH_AFTER_MS after it
// got ready, every time it starts. It returns ENOTFOUND for an image that is
// no sample and EINVALID for one that did not build.
func (im FakeImageForTest) Server(env map[string]string) (FakeProcessForTest, error) {
	s, err := im.runnable()
	if err != nil {
		return FakeProcessForTest{}, err
	}
	port := env[runtimes.EnvPort]
	if port == "" {
		port = "8080"
	}
	if msg := loadError(s, env); msg != "" {
		return FakeProcessForTest{Port: port, Exits: true, ExitCode: 1, Stderr: msg}, nil
	}
	if s.kind == kindCrashLoop {
		return FakeProcessForTest{Ready: true, Port: port, Exits: true, After: crashAfter(env), ExitCode: 3, Stderr: "dying on purpose\n"}, nil
	}
	return FakeProcessForTest{Ready: true, Port: port}, nil
}

// Job predicts a job-mode container: the wrapper loads the function, calls
// it with SLESS_EVENT, prints its JSON result as the last stdout line and
// exits 0; it exits 1 with the error on stderr when the function fails, and
// 124 when SLESS_TIMEOUT_SEC passes first (except that a busy loop keeps
// the Node.js wrapper's timer from firing: that process runs until it is
// stopped). pid is the process identity ("instance") the sample reports. It returns ENOTFOUND
// for an image that is no sample and EINVALID for one that did not build.
func (im FakeImageForTest) Job(env map[string]string, pid int) (FakeProcessForTest, error) {
	s, err := im.runnable()
	if err != nil {
		return FakeProcessForTest{}, err
	}
	if msg := loadError(s, env); msg != "" {
		return FakeProcessForTest{Exits: true, ExitCode: 1, Stderr: msg}, nil
	}
	event, err := jobEvent(env[runtimes.EnvEvent])
	if err != nil {
		return FakeProcessForTest{Exits: true, ExitCode: 1, Stderr: "sless: " + runtimes.EnvEvent + ": " + err.Error() + "\n"}, nil
	}
	c := call(s, env, event, pid)
	timeout, _ := strconv.ParseFloat(env[runtimes.EnvTimeoutSec], 64)
	limit := time.Duration(timeout * float64(time.Second))
	switch {
	case c.forever:
		return FakeProcessForTest{Stdout: c.printed}, nil
	case timeout > 0 && c.takes > limit:
		return FakeProcessForTest{Exits: true, After: limit, ExitCode: 124, Stdout: c.printed,
			Stderr: fmt.Sprintf("sless: timed out after %g seconds\n", timeout)}, nil
	case c.exit != 0:
		return FakeProcessForTest{Exits: true, After: c.takes, ExitCode: c.exit, Stdout: c.printed, Stderr: c.stderr}, nil
	case c.raised != "":
		return FakeProcessForTest{Exits: true, After: c.takes, ExitCode: 1, Stdout: c.printed, Stderr: c.raised}, nil
	}
	out, err := json.Marshal(c.result)
	if err != nil {
		return FakeProcessForTest{}, err
	}
	p := FakeProcessForTest{Exits: true, After: c.takes, Stdout: c.printed + string(out) + "\n"}
	if s.kind == kindCrashLoop { // its timer thread ends the process after the result
		p.After, p.ExitCode, p.Stderr = crashAfter(env), 3, "dying on purpose\n"
	}
	return p, nil
}

// Answer predicts a ready server's answer to GET path: the body of a 200
// answer, or an error for a request that fails (the function raises: 500;
// "/crash": the process exits before it answers). pid is the process identity ("instance") the
// sample reports. It returns ENOTFOUND for an image that is no sample and
// EINVALID for one that did not build; other errors are failed requests.
func (im FakeImageForTest) Answer(env map[string]string, path string, pid int) ([]byte, error) {
	s, err := im.runnable()
	if err != nil {
		return nil, err
	}
	event := map[string]any{"_method": "GET", "_path": path, "_query": map[string]any{}, "_headers": map[string]any{}, "_accept": ""}
	c := call(s, env, event, pid)
	switch {
	case c.exit != 0:
		return nil, fmt.Errorf("GET %s: connection closed: the process exited with status %d before it answered", path, c.exit)
	case c.raised != "":
		return nil, fmt.Errorf("GET %s: 500 Internal Server Error: %s", path, lastLine(c.raised))
	}
	return json.Marshal(c.result)
}

// jobEvent decodes SLESS_EVENT as the wrappers do: empty is {}, anything
// but a JSON object is an error. Numbers keep their literal.
func jobEvent(text string) (map[string]any, error) {
	if strings.TrimSpace(text) == "" {
		return map[string]any{}, nil
	}
	d := json.NewDecoder(bytes.NewReader([]byte(text)))
	d.UseNumber()
	var event map[string]any
	if err := d.Decode(&event); err != nil || event == nil {
		return nil, fmt.Errorf("must be a JSON object")
	}
	return event, nil
}

// fakeCall is what one call of a sample's function does.
type fakeCall struct {
	result  any
	printed string        // what the function printed on stdout
	raised  string        // the error the wrapper reports on stderr, when it raised
	exit    int           // the process exits with it during the call; 0: it does not
	stderr  string        // what the process printed on stderr before exiting
	takes   time.Duration // how long the call runs
	forever bool          // never yields: a busy loop
}

// call runs a sample's function in the mind: samples.go says what each
// action of each sample does.
func call(s fakeSample, env map[string]string, event map[string]any, pid int) fakeCall {
	switch s.kind {
	case kindNodeDependency:
		return fakeCall{result: map[string]any{"greeting": "hello from a local package"}}
	case kindCrashLoop:
		return fakeCall{result: map[string]any{"alive": true}}
	}
	action, _ := event["action"].(string)
	if action == "" {
		path, _ := event["_path"].(string)
		action = strings.Trim(path, "/")
	}
	n, hasN := event["n"]
	word := sampleRuntimes[s.runtime].word
	switch {
	case action == "crash":
		return fakeCall{exit: 3, stderr: "crashing on purpose\n"}
	case action == "fail":
		return fakeCall{raised: sampleRuntimes[s.runtime].raised(n, hasN)}
	case action == "sleep":
		return fakeCall{result: "woke", takes: time.Minute}
	case action == "spin" && sampleRuntimes[s.runtime].spinOutlivesTimeout:
		return fakeCall{forever: true}
	}
	return fakeCall{printed: "hello from " + word + "\n", result: map[string]any{
		"runtime": word, "version": s.version, "instance": pid, "greeting": env["GREETING"], "n": n}}
}

// pythonRaised is what the Python wrapper prints when the sample raises
// "bad input: <n>".
func pythonRaised(n any, _ bool) string {
	return "Traceback (most recent call last):\n  File \"/app/function/handler.py\", line 15, in handle\n" +
		"    raise ValueError(\"bad input: %s\" % event.get(\"n\"))\nValueError: bad input: " + pythonStr(n) + "\n"
}

// nodeRaised is what the Node.js wrapper prints when the sample throws
// "bad input: <n>".
func nodeRaised(n any, hasN bool) string {
	text := "undefined"
	if hasN {
		text = jsString(n)
	}
	return "Error: bad input: " + text + "\n    at exports.handle (/app/function/handler.js:10:32)\n    at runJob (/app/sless_wrapper.js:319:26)\n"
}

// goRaised is what the Go wrapper prints when the sample returns the error
// "bad input: <n>".
func goRaised(n any, _ bool) string {
	if n == nil {
		return "error: bad input: <nil>\n"
	}
	return "error: bad input: " + fmt.Sprint(n) + "\n"
}

// pythonStr is str() of a decoded JSON value, for the values the suite sends.
func pythonStr(v any) string {
	switch v := v.(type) {
	case nil:
		return "None"
	case bool:
		if v {
			return "True"
		}
		return "False"
	}
	return fmt.Sprint(v)
}

// jsString is String() of a decoded JSON value, for the values the suite sends.
func jsString(v any) string {
	if v == nil {
		return "null"
	}
	return fmt.Sprint(v)
}
