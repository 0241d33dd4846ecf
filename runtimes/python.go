package runtimes

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/slessio/sless/domain"
)

const pythonWrapper = "sless_wrapper.py"

// pythonEntrypoint is module.function with a dotted module path.
var pythonEntrypoint = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)+$`)

var python3 = newInterpreter("python3", "-c", "import sys; print(sys.executable)")

// python runs functions with the standard library only: nothing to build, and no
// package index to install a requirements.txt from.
type python struct{}

func init() {
	register(Description{Name: "python3.11", ReadOnlyRoot: true, lang: python{}})
}

func (python) install(dir, entrypoint string) error {
	if msg := requirementsUnsupported(filepath.Join(dir, FunctionDir)); msg != "" {
		return domain.Errorf(domain.EUNPROCESSABLE, "%s", msg)
	}
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

// requirementsUnsupported returns why a Python function that lists packages
// in requirements.txt cannot be installed, "" when it lists none.
func requirementsUnsupported(fnDir string) string {
	data, err := os.ReadFile(filepath.Join(fnDir, "requirements.txt"))
	if err != nil {
		return ""
	}
	var reqs []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line, _, _ := strings.Cut(sc.Text(), "#")
		if line = strings.TrimSpace(line); line != "" {
			reqs = append(reqs, line)
		}
	}
	if len(reqs) == 0 {
		return ""
	}
	return fmt.Sprintf("requirements.txt is not supported in local mode: sless dev runs Python functions "+
		"with the standard library only and installs no packages (requirements.txt lists %s). "+
		"Copy pure-Python dependencies into the zip next to your code, or deploy to a cluster.", strings.Join(reqs, ", "))
}
