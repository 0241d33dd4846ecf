package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"

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
