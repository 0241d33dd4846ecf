package drivertest

import (
	"fmt"

	"github.com/slessio/sless/domain"
)

// sample is the code of one test function: its files and how to call it.
type sample struct {
	runtime    domain.Runtime
	entrypoint string
	files      map[string]string
}

// sampleRuntime is what the suite knows of one runtime's samples and
// wrapper, besides the sample functions below: a new runtime adds a row to
// sampleRuntimes and its samples.
type sampleRuntime struct {
	word string // what its samples say their runtime is ("hello from <word>")
	// traceback is what a failed job's stderr must also hold, "" for nothing.
	traceback string
}

// sampleRuntimes describes the samples of each runtime.
var sampleRuntimes = map[domain.Runtime]sampleRuntime{
	domain.RuntimePython311: {word: "python", traceback: "Traceback"},
	domain.RuntimeNodeJS20:  {word: "node"},
	domain.RuntimeGo123:     {word: "go"},
}

// The sample functions answer by event["action"] (jobs) or the request path
// (HTTP): "" says hello and returns who answered, "crash" exits the process
// with status 3, "fail" raises, "sleep" sleeps a minute, "spin" (Node.js)
// busy-loops without turning the event loop. version marks the code, so that
// two versions differ and the suite can tell which one answered; "instance"
// is a random number each process draws when it loads, which tells processes
// apart where pids cannot (a sandbox's or a container's pid namespace gives
// every function the same pid).

func pythonSample(version string) sample {
	return sample{runtime: domain.RuntimePython311, entrypoint: "handler.handle", files: map[string]string{
		"handler.py": fmt.Sprintf(`import os
import random
import sys
import time

VERSION = %q
INSTANCE = random.SystemRandom().getrandbits(48)


def handle(event):
    action = event.get("action") or event.get("_path", "/").strip("/")
    if action == "crash":
        sys.__stderr__.write("crashing on purpose\n")
        sys.__stderr__.flush()
        os._exit(3)
    if action == "fail":
        raise ValueError("bad input: %%s" %% event.get("n"))
    if action == "sleep":
        time.sleep(60)
        return "woke"
    print("hello from python")
    return {"runtime": "python", "version": VERSION, "instance": INSTANCE,
            "greeting": os.environ.get("GREETING", ""), "n": event.get("n")}
`, version),
	}}
}

func nodeSample(version string) sample {
	return sample{runtime: domain.RuntimeNodeJS20, entrypoint: "handler.handle", files: map[string]string{
		"handler.js": fmt.Sprintf(`'use strict'
const VERSION = %q
const INSTANCE = require('crypto').randomInt(2 ** 47)

exports.handle = async (event) => {
  const action = event.action || (event._path || '/').replace(/^\/+|\/+$/g, '')
  if (action === 'crash') {
    process.stderr.write('crashing on purpose\n')
    process.exit(3)
  }
  if (action === 'fail') throw new Error('bad input: ' + event.n)
  if (action === 'sleep') {
    await new Promise((resolve) => setTimeout(resolve, 60000))
    return 'woke'
  }
  if (action === 'spin') {
    for (;;) {} // never yields: only the driver can end it
  }
  console.log('hello from node')
  return { runtime: 'node', version: VERSION, instance: INSTANCE, greeting: process.env.GREETING || '', n: event.n ?? null }
}
`, version),
	}}
}

func goSample(version string) sample {
	return sample{runtime: domain.RuntimeGo123, entrypoint: "Handle", files: map[string]string{
		"go.mod": "module example.com/sample\n\ngo 1.23\n",
		"handler.go": fmt.Sprintf(`package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"strings"
	"time"
)

const version = %q

var instance = rand.Int63n(1 << 48)

// Handle is the sample's entrypoint.
func Handle(ctx context.Context, event map[string]any) (any, error) {
	action, _ := event["action"].(string)
	if action == "" {
		path, _ := event["_path"].(string)
		action = strings.Trim(path, "/")
	}
	switch action {
	case "crash":
		fmt.Fprintln(os.Stderr, "crashing on purpose")
		os.Exit(3)
	case "fail":
		return nil, errors.New(fmt.Sprint("bad input: ", event["n"]))
	case "sleep":
		time.Sleep(time.Minute)
		return "woke", nil
	}
	fmt.Println("hello from go")
	return map[string]any{"runtime": "go", "version": version, "instance": instance,
		"greeting": os.Getenv("GREETING"), "n": event["n"]}, nil
}
`, version),
	}}
}

// goCompileErrorSample does not compile: the build must fail with the
// compiler's message naming notDefined.
func goCompileErrorSample() sample {
	return sample{runtime: domain.RuntimeGo123, entrypoint: "Handle", files: map[string]string{
		"go.mod": "module example.com/broken\n\ngo 1.23\n",
		"handler.go": `package main

import "context"

// Handle returns a name that does not exist.
func Handle(ctx context.Context, event map[string]any) (any, error) {
	return notDefined, nil
}
`,
	}}
}

// nodeDependencySample depends on a package in its own zip through a file:
// dependency: npm installs it without a registry.
func nodeDependencySample() sample {
	return sample{runtime: domain.RuntimeNodeJS20, entrypoint: "handler.handle", files: map[string]string{
		"package.json": `{
  "name": "sample-with-dependency",
  "version": "1.0.0",
  "private": true,
  "dependencies": { "greet": "file:./greet" }
}
`,
		"greet/package.json": `{ "name": "greet", "version": "1.0.0", "main": "index.js" }
`,
		"greet/index.js": `exports.text = () => 'hello from a local package'
`,
		"handler.js": `const greet = require('greet')
exports.handle = async () => ({ greeting: greet.text() })
`,
	}}
}

// crashLoopSample loads and gets healthy, then exits SAMPLE_CRASH_AFTER_MS
// later, every time it is started.
func crashLoopSample() sample {
	return sample{runtime: domain.RuntimePython311, entrypoint: "handler.handle", files: map[string]string{
		"handler.py": `import os
import sys
import threading


def _die():
    sys.__stderr__.write("dying on purpose\n")
    sys.__stderr__.flush()
    os._exit(3)


threading.Timer(int(os.environ.get("SAMPLE_CRASH_AFTER_MS", "500")) / 1000, _die).start()


def handle(event):
    return {"alive": True}
`,
	}}
}

// loadFailureSample raises while it is imported: it never gets healthy.
func loadFailureSample() sample {
	return sample{runtime: domain.RuntimePython311, entrypoint: "handler.handle", files: map[string]string{
		"handler.py": `raise RuntimeError("cannot load: SAMPLE_SETTING is missing")


def handle(event):
    return "unreachable"
`,
	}}
}

// secretsSample answers with its secret variable SAMPLE_TOKEN and the
// content of its secret file /run/secrets/<SAMPLE_SECRET_FILE> in hex, and
// lists what it could change of that folder (nothing, it must be).
func secretsSample() sample {
	return sample{runtime: domain.RuntimePython311, entrypoint: "handler.handle", files: map[string]string{
		"handler.py": `import os

DIR = "/run/secrets"


def _try(what, path, mode):
    try:
        with open(path, mode) as f:
            f.write(b"x")
        return [what]
    except OSError:
        return []


def handle(event):
    path = os.path.join(DIR, os.environ.get("SAMPLE_SECRET_FILE", ""))
    try:
        with open(path, "rb") as f:
            content = f.read().hex()
    except OSError as e:
        content = "unreadable: %s" % e
    changed = _try("appended", path, "ab") + _try("created", os.path.join(DIR, "new"), "wb")
    return {"token": os.environ.get("SAMPLE_TOKEN", ""), "file": content, "changed": changed}
`,
	}}
}
