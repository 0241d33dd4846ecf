package runtimes

import (
	"context"
	"path/filepath"
	"regexp"

	"github.com/slessio/sless/domain"
)

const pythonWrapper = "sless_wrapper.py"

// pythonEntrypoint is module.function with a dotted module path.
var pythonEntrypoint = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)+$`)

var python3 = newInterpreter("python3", "-c", "import sys; print(sys.executable)")

// python runs functions with the standard library only: nothing to build, and no
// package index to install a requirements.txt from.
type python struct{}

func (python) install(dir, entrypoint string) error {
	if !pythonEntrypoint.MatchString(entrypoint) {
		return domain.FieldErrorf("entrypoint", "must be module.function, like handler.handle; got %q", entrypoint)
	}
	return copyWrapper("python3.11", pythonWrapper, filepath.Join(dir, pythonWrapper))
}

func (python) build(context.Context, string, BuildOptions) (string, error) { return "", nil }

func (python) program(dir string) (string, []string, []string, error) {
	wrapper := filepath.Join(dir, pythonWrapper)
	if err := requireFile(wrapper, "install the runtime"); err != nil {
		return "", nil, nil, err
	}
	path, err := python3.resolve()
	if err != nil {
		return "", nil, nil, err
	}
	// -u: output reaches the driver as it is written, and a job's last line survives
	// an exit on timeout.
	return path, []string{"-u", wrapper}, []string{"PYTHONIOENCODING=utf-8"}, nil
}
