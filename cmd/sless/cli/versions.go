package cli

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/slessio/sless/httpapi/client"
)

func versionsCommand(c *conn) *cobra.Command {
	return &cobra.Command{
		Use:     "versions NAME",
		Short:   "List a function's versions (digest, build status, built at) and activations",
		Example: "  sless fn versions hello",
		Args:    cobra.ExactArgs(1),
		RunE: c.runE(func(cmd *cobra.Command, args []string, cl *client.Client, url string) error {
			l, err := cl.ListVersions(cmd.Context(), args[0])
			if err != nil {
				return explain(err, url, fmt.Sprintf("function %q", args[0]), "sless fn ls")
			}
			return c.print(cmd.OutOrStdout(), l, func(w io.Writer) error {
				tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "VERSION\tACTIVE\tBUILD\tDIGEST\tCREATED\tBUILT\tMESSAGE")
				for _, v := range l.Versions {
					active, built := "", "-"
					if v.Active {
						active = "*"
					}
					if v.BuiltAt != nil {
						built = v.BuiltAt.UTC().Format(time.RFC3339)
					}
					fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\n", v.Version, active, v.BuildStatus, shortDigest(v.Digest),
						v.CreatedAt.UTC().Format(time.RFC3339), built, headline(v.Message))
				}
				return tw.Flush()
			})
		}),
	}
}

func rollbackCommand(c *conn) *cobra.Command {
	var to int
	cmd := &cobra.Command{
		Use:     "rollback NAME --to N",
		Short:   "Activate a built version again, without a rebuild",
		Example: "  sless fn rollback hello --to 1",
		Args:    cobra.ExactArgs(1),
		RunE: c.runE(func(cmd *cobra.Command, args []string, cl *client.Client, url string) error {
			res, err := cl.Rollback(cmd.Context(), args[0], to)
			if err != nil {
				return explain(err, url, fmt.Sprintf("function %q or its version %d", args[0], to), "sless fn versions "+args[0])
			}
			if res.BuildRequeued {
				fmt.Fprintf(cmd.OutOrStdout(), "Version %d still waited for its build, which is queued again: roll back once it is built.\n", to)
				return nil
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Function %s: version %d is active.\n", res.Name, res.ActiveVersion)
			return nil
		}),
	}
	cmd.Flags().IntVar(&to, "to", 0, "the version to activate (required)")
	_ = cmd.MarkFlagRequired("to")
	return cmd
}

func sourceCommand(c *conn) *cobra.Command {
	var version int
	var out string
	cmd := &cobra.Command{
		Use:   "source NAME [FILE]",
		Short: "Print a file of a function's code, or write all of it into a directory",
		Example: `  sless fn source hello handler.py
  sless fn source hello --version 1 --out ./hello-v1`,
		Args: cobra.RangeArgs(1, 2),
		RunE: c.runE(func(cmd *cobra.Command, args []string, cl *client.Client, url string) error {
			src, err := cl.Source(cmd.Context(), args[0], version)
			if err != nil {
				return explain(err, url, fmt.Sprintf("the code of function %q", args[0]), "sless fn versions "+args[0])
			}
			if len(args) == 2 {
				for _, f := range src.Files {
					if f.Name == args[1] {
						data, err := f.Bytes()
						if err != nil {
							return err
						}
						_, err = cmd.OutOrStdout().Write(data)
						return err
					}
				}
				var names []string
				for _, f := range src.Files {
					names = append(names, f.Name)
				}
				return fmt.Errorf("version %d of %s has no file %q; it has: %s", src.Version, args[0], args[1], strings.Join(names, ", "))
			}
			if out == "" {
				for _, f := range src.Files {
					fmt.Fprintln(cmd.OutOrStdout(), f.Name)
				}
				fmt.Fprintf(cmd.ErrOrStderr(), "(version %d; name a file to print it, or --out DIR to write them all)\n", src.Version)
				return nil
			}
			for _, f := range src.Files {
				data, err := f.Bytes()
				if err != nil {
					return err
				}
				p := filepath.Join(out, filepath.FromSlash(f.Name))
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					return err
				}
				if err := os.WriteFile(p, data, 0o644); err != nil {
					return err
				}
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Wrote %d files of version %d to %s.\n", len(src.Files), src.Version, out)
			return nil
		}),
	}
	cmd.Flags().IntVar(&version, "version", 0, "the version (default: the active one)")
	cmd.Flags().StringVar(&out, "out", "", "write every file into this directory")
	return cmd
}

// shortDigest is the start of a "sha256:..." digest.
func shortDigest(d string) string {
	d = strings.TrimPrefix(d, "sha256:")
	if len(d) > 12 {
		d = d[:12]
	}
	return d
}

// firstLine is the first line of s.
func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

// headline is the line of a message that says what went wrong, for a
// listing: its first, except for a Python traceback, whose exception's own
// line ("ValueError: ...") comes last; the whole message stays in `get`.
func headline(s string) string {
	s = strings.TrimSpace(s)
	if !strings.HasPrefix(s, "Traceback (most recent call last):") {
		return firstLine(s)
	}
	lines := strings.Split(s, "\n")
	for i := len(lines) - 1; i > 0; i-- {
		if l := strings.TrimRight(lines[i], " \r"); l != "" && !strings.HasPrefix(l, " ") && !strings.HasPrefix(l, "\t") {
			return l
		}
	}
	return firstLine(s)
}
