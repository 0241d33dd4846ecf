package cli

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/httpapi/client"
	"github.com/slessio/sless/secrets"
)

// secretCommand is `sless secret`: the namespace's secrets, whose values
// are write-only.
func secretCommand() *cobra.Command {
	c := &conn{}
	cmd := &cobra.Command{
		Use:   "secret",
		Short: "Manage the secrets of your namespace (values functions get as env vars or files)",
		Long: `A secret is a named value of your namespace that functions receive as an
environment variable (fn deploy --secret ENV=SECRET) or as the file
/run/secrets/SECRET (fn deploy --secret-file SECRET). Its value is write-only:
no command and no API answer shows it again. Setting a secret makes a new
version of it, and every function that uses it a new version running the new
value.`,
		Example: `  sless secret set db-password                    # asks for the value, without echo
  sless secret set tls-key --from-file key.pem
  vault read -field=pw db | sless secret set db-password
  sless fn deploy ./api --secret DB_PASSWORD=db-password --secret-file tls-key
  sless secret ls`,
	}
	c.bind(cmd)
	notFound := func(name string) string { return fmt.Sprintf("secret %q", name) }

	var fromFile string
	set := &cobra.Command{
		Use:   "set NAME [--from-file FILE]",
		Short: "Set a secret's value, from a file or stdin (never an argument)",
		Long: `Set the value of secret NAME, creating it or making a new version of it; each
function that uses it gets a new version running the new value, which the
command lists.

The value comes from --from-file, byte for byte, or else from stdin: typed at a
prompt without echo on a terminal, or piped (one trailing newline, as echo
adds, is dropped). It is never taken as an argument: arguments stay in your
shell's history and are visible to other users in the process list. At most
64 KiB; bytes that are not UTF-8 text are fine.`,
		Example: `  sless secret set db-password
  sless secret set tls-key --from-file key.pem
  printf %s "$PW" | sless secret set db-password`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 1 {
				return errors.New("sless secret set takes only the secret's NAME: give the value with --from-file FILE or on stdin, never as an argument (it would stay in your shell's history)")
			}
			return cobra.ExactArgs(1)(cmd, args)
		},
		RunE: c.runE(func(cmd *cobra.Command, args []string, cl *client.Client, url string) error {
			if err := domain.ValidateName("name", args[0]); err != nil {
				return fmt.Errorf("secret name %s", messageOf(err))
			}
			value, err := secretValue(args[0], fromFile, cmd.InOrStdin(), cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			s, err := cl.SetSecret(cmd.Context(), args[0], value)
			if err != nil {
				return explain(err, url, "", "")
			}
			return c.print(cmd.OutOrStdout(), s, func(w io.Writer) error {
				fmt.Fprintf(w, "Set secret %s: version %d.\n", s.Name, s.Version)
				for _, r := range s.Rolled {
					fmt.Fprintf(w, "Function %s: version %d runs it.\n", r.Function, r.Version)
				}
				return nil
			})
		}),
	}
	set.Flags().StringVar(&fromFile, "from-file", "", "read the value from this file, byte for byte (default: stdin)")

	ls := &cobra.Command{
		Use: "ls", Short: "List the secrets (never their values)", Args: cobra.NoArgs, Example: "  sless secret ls",
		RunE: c.runE(func(cmd *cobra.Command, _ []string, cl *client.Client, url string) error {
			ss, err := cl.ListSecrets(cmd.Context())
			if err != nil {
				return explain(err, url, "", "")
			}
			return c.print(cmd.OutOrStdout(), ss, func(w io.Writer) error { return writeSecrets(w, ss) })
		}),
	}
	get := &cobra.Command{
		Use: "get NAME", Short: "Show a secret: its version and the functions using it (never its value)",
		Args: cobra.ExactArgs(1), Example: "  sless secret get db-password",
		RunE: c.runE(func(cmd *cobra.Command, args []string, cl *client.Client, url string) error {
			s, err := cl.GetSecret(cmd.Context(), args[0])
			if err != nil {
				return explain(err, url, notFound(args[0]), "sless secret ls")
			}
			return c.print(cmd.OutOrStdout(), s, func(w io.Writer) error { return writeSecret(w, s) })
		}),
	}
	rm := &cobra.Command{
		Use: "rm NAME", Short: "Delete a secret and destroy its values (refused while functions use it)",
		Args: cobra.ExactArgs(1), Example: "  sless secret rm db-password",
		RunE: c.runE(func(cmd *cobra.Command, args []string, cl *client.Client, url string) error {
			if err := cl.DeleteSecret(cmd.Context(), args[0]); err != nil {
				return explain(err, url, notFound(args[0]), "sless secret ls") // a 409 names the functions using it
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Deleted secret %s.\n", args[0])
			return nil
		}),
	}
	cmd.AddCommand(set, ls, get, rm)
	return cmd
}

// secretValue reads the value of secret name: from file, or from stdin,
// where a terminal is asked at a prompt on prompt without echo.
func secretValue(name, file string, stdin io.Reader, prompt io.Writer) ([]byte, error) {
	var value []byte
	var err error
	switch f, ok := stdin.(*os.File); {
	case file != "":
		value, err = readAtMost(file, nil)
	case ok && term.IsTerminal(int(f.Fd())):
		fmt.Fprintf(prompt, "Value of secret %s (not echoed): ", name)
		value, err = term.ReadPassword(int(f.Fd()))
		fmt.Fprintln(prompt)
		if err != nil {
			return nil, fmt.Errorf("read the value from the terminal: %w", err)
		}
	default:
		value, err = readAtMost("stdin", stdin)
		if v, crlf := bytes.CutSuffix(value, []byte("\r\n")); crlf {
			value = v
		} else {
			value = bytes.TrimSuffix(value, []byte("\n"))
		}
	}
	switch {
	case err != nil:
		return nil, err
	case len(value) == 0 && file != "":
		return nil, fmt.Errorf("--from-file %s is empty: a secret needs a value", file)
	case len(value) == 0:
		return nil, errors.New("the value is empty: type it at the prompt, pipe it to stdin or give --from-file FILE")
	case len(value) > secrets.MaxValueBytes:
		return nil, fmt.Errorf("the value is over the limit of %d KiB", secrets.MaxValueBytes>>10)
	}
	return value, nil
}

// readAtMost reads r (or, when r is nil, the file name) up to one byte
// over the limit of a value, enough to tell that it is too large without
// reading a huge file whole.
func readAtMost(name string, r io.Reader) ([]byte, error) {
	if r == nil {
		f, err := os.Open(name)
		if err != nil {
			return nil, fmt.Errorf("--from-file: %w", err)
		}
		defer f.Close()
		r = f
	}
	value, err := io.ReadAll(io.LimitReader(r, secrets.MaxValueBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read the value from %s: %w", name, err)
	}
	return value, nil
}

// writeSecrets renders secrets as a table.
func writeSecrets(w io.Writer, ss []client.Secret) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tVERSION\tUPDATED\tUSED BY")
	for _, s := range ss {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\n", s.Name, s.Version, s.UpdatedAt.UTC().Format(time.RFC3339), usedBy(s.UsedBy))
	}
	return tw.Flush()
}

// writeSecret renders one secret as aligned "key: value" lines.
func writeSecret(w io.Writer, s *client.Secret) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, r := range [][2]string{
		{"name", s.Name},
		{"version", fmt.Sprint(s.Version)},
		{"used by", usedBy(s.UsedBy)},
		{"created", s.CreatedAt.UTC().Format(time.RFC3339)},
		{"updated", s.UpdatedAt.UTC().Format(time.RFC3339)},
	} {
		fmt.Fprintf(tw, "%s:\t%s\n", r[0], r[1])
	}
	return tw.Flush()
}

// usedBy lists the functions using a secret, "-" for none.
func usedBy(fns []string) string {
	if len(fns) == 0 {
		return "-"
	}
	return strings.Join(sorted(fns), ", ")
}
