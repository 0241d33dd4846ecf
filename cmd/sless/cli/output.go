package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"

	"golang.org/x/term"
	"sigs.k8s.io/yaml"
)

// print writes v as -o asks: JSON or YAML of the API's shape, or text, which
// the command renders itself.
func (c *conn) print(w io.Writer, v any, text func(io.Writer) error) error {
	switch c.output {
	case "", "text":
		return text(w)
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	case "yaml":
		data, err := yaml.Marshal(v)
		if err != nil {
			return err
		}
		_, err = w.Write(data)
		return err
	}
	return fmt.Errorf("-o %s: the output formats are text, json and yaml", c.output)
}

// sorted returns s sorted.
func sorted(s []string) []string {
	slices.Sort(s)
	return s
}

// dim writes s faint on a terminal (build output under the spinner),
// plain elsewhere or with NO_COLOR.
func dim(w io.Writer, s string) string {
	if os.Getenv("NO_COLOR") != "" || !isTerminal(w) {
		return s
	}
	return "\x1b[2m" + s + "\x1b[0m"
}

// colour paints a phase or state for a terminal: green Ready and
// Succeeded, red Failed, yellow the rest (and so an asynchronous
// invocation's: green succeeded, red failed and dead_lettered); plain text
// when w is not a terminal or NO_COLOR is set (https://no-color.org).
func colour(w io.Writer, phase string) string {
	if os.Getenv("NO_COLOR") != "" || !isTerminal(w) {
		return phase
	}
	code := "33"
	switch phase {
	case "Ready", "Succeeded", "succeeded":
		code = "32"
	case "Failed", "failed", "dead_lettered":
		code = "31"
	}
	return "\x1b[" + code + "m" + phase + "\x1b[0m"
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
