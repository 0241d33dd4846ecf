package cli

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/httpapi/client"
)

// AddCommands adds the client commands to the root command.
func AddCommands(root *cobra.Command) {
	root.AddCommand(loginCommand(), fnCommand(), triggerCommand(), jobCommand(), secretCommand(), eventsCommand())
}

// fnCommand is `sless fn`: the functions of the namespace.
func fnCommand() *cobra.Command {
	c := &conn{}
	cmd := &cobra.Command{
		Use:   "fn",
		Short: "Manage the functions of your namespace",
		Example: `  sless fn init hello --runtime python3.11
  sless fn deploy hello
  sless fn invoke hello --data '{"name": "sless"}'
  sless fn invoke hello --data '{"name": "later"}' --async
  sless fn logs hello --follow`,
	}
	c.bind(cmd)
	cmd.AddCommand(
		initCommand(),
		deployCommand(c),
		invokeCommand(c),
		invocationCommand(c),
		dlqCommand(c),
		logsCommand(c),
		versionsCommand(c),
		rollbackCommand(c),
		sourceCommand(c),
		&cobra.Command{
			Use:     "ls",
			Short:   "List the functions (the human listing; -o json|yaml for data)",
			Example: "  sless fn ls\n  sless fn ls -o json",
			Args:    cobra.NoArgs,
			RunE: c.runE(func(cmd *cobra.Command, _ []string, cl *client.Client, url string) error {
				if c.output == "" || c.output == "text" {
					text, err := cl.FunctionListing(cmd.Context())
					if err != nil {
						return explain(err, url, "", "")
					}
					if !strings.HasSuffix(text, "\n") {
						text += "\n"
					}
					_, err = io.WriteString(cmd.OutOrStdout(), text)
					return err
				}
				fns, err := cl.ListFunctions(cmd.Context())
				if err != nil {
					return explain(err, url, "", "")
				}
				return c.print(cmd.OutOrStdout(), fns, nil)
			}),
		},
		&cobra.Command{
			Use:     "get NAME",
			Short:   "Show a function: configuration, phase, versions",
			Example: "  sless fn get hello\n  sless fn get hello -o yaml",
			Args:    cobra.ExactArgs(1),
			RunE: c.runE(func(cmd *cobra.Command, args []string, cl *client.Client, url string) error {
				fn, err := cl.GetFunction(cmd.Context(), args[0])
				if err != nil {
					return explain(err, url, fmt.Sprintf("function %q", args[0]), "sless fn ls")
				}
				return c.print(cmd.OutOrStdout(), fn, func(w io.Writer) error { return writeFunction(w, fn) })
			}),
		},
		&cobra.Command{
			Use:     "rm NAME",
			Short:   "Delete a function with its versions and triggers (its jobs stay)",
			Example: "  sless fn rm hello",
			Args:    cobra.ExactArgs(1),
			RunE: c.runE(func(cmd *cobra.Command, args []string, cl *client.Client, url string) error {
				if err := cl.DeleteFunction(cmd.Context(), args[0]); err != nil {
					return explain(err, url, fmt.Sprintf("function %q", args[0]), "sless fn ls")
				}
				fmt.Fprintf(cmd.OutOrStdout(), "Deleted function %s.\n", args[0])
				return nil
			}),
		},
	)
	return cmd
}

// writeFunction renders a function as aligned "key: value" lines.
func writeFunction(w io.Writer, fn *client.Function) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	built := "never"
	if fn.LastBuiltAt != nil {
		built = fn.LastBuiltAt.UTC().Format(time.RFC3339)
	}
	var env []string
	for k, v := range fn.EnvVars {
		env = append(env, k+"="+v)
	}
	rows := [][2]string{
		{"name", fn.Name},
		{"runtime", fn.Runtime},
		{"entrypoint", fn.Entrypoint},
		{"phase", colour(w, string(fn.Phase))},
		{"message", fn.Message},
		{"last build failed", lastBuildFailure(fn)},
		{"active version", fmt.Sprint(fn.ActiveVersion)},
		{"serving version", fmt.Sprint(fn.ServingVersion)},
		{"memory", fmt.Sprintf("%d MiB", fn.MemoryMB)},
		{"timeout", fmt.Sprintf("%d s", fn.TimeoutSec)},
		{"max concurrency", fmt.Sprint(fn.MaxConcurrency)},
		{"retry safe", fmt.Sprint(fn.RetrySafe)},
		{"async max retries", fmt.Sprint(fn.Async.MaxRetries)},
		{"async max event age", fmt.Sprintf("%d s", fn.Async.MaxEventAgeSec)},
		{"async max concurrency", asyncConcurrency(fn.Async.MaxConcurrency)},
		{"min instances", minInstances(fn.MinInstances)},
		{"max instances", maxInstances(fn.MaxInstances)},
		{"concurrency", concurrency(fn)},
		{"instances now", instancesNow(fn)},
		{"env", strings.Join(sorted(env), " ")},
		{"secrets", secretEnvs(fn)},
		{"secret files", secretFiles(fn)},
		{"created", fn.CreatedAt.UTC().Format(time.RFC3339)},
		{"last built", built},
	}
	for _, r := range rows {
		if (r[0] == "last build failed" || r[0] == "instances now") && r[1] == "" {
			continue
		}
		fmt.Fprintf(tw, "%s:\t%s\n", r[0], r[1])
	}
	return tw.Flush()
}

// secretEnvs lists the env vars a function takes from secrets, with the
// version of each secret its configuration runs: "DB_PASSWORD=db (v3)".
func secretEnvs(fn *client.Function) string {
	var out []string
	for env, secret := range fn.Secrets {
		out = append(out, fmt.Sprintf("%s=%s (v%d)", env, secret, fn.SecretVersions[secret]))
	}
	return strings.Join(sorted(out), " ")
}

// secretFiles lists the secret files of a function where it reads them,
// with versions: "/run/secrets/tls-key (v1)".
func secretFiles(fn *client.Function) string {
	var out []string
	for _, secret := range fn.SecretFiles {
		out = append(out, fmt.Sprintf("%s/%s (v%d)", domain.SecretFilesDir, secret, fn.SecretVersions[secret]))
	}
	return strings.Join(sorted(out), " ")
}

// asyncConcurrency is a function's async max_concurrency for people.
func asyncConcurrency(n int) string {
	if n == 0 {
		return "0 (no bound of its own)"
	}
	return fmt.Sprint(n)
}

// minInstances is a function's min_instances for people.
func minInstances(n int) string {
	if n == 0 {
		return "0 (scale to zero when idle)"
	}
	return fmt.Sprintf("%d (kept running)", n)
}

// maxInstances is a function's max_instances for people.
func maxInstances(n int) string {
	if n == 0 {
		return "0 (the platform's default)"
	}
	return fmt.Sprint(n)
}

// concurrency is a function's concurrency for people, with the runtime's
// default when it sets none.
func concurrency(fn *client.Function) string {
	if fn.Concurrency == 0 {
		return fmt.Sprintf("0 (the runtime's default: %d per instance)", domain.DefaultConcurrency(domain.Runtime(fn.Runtime)))
	}
	return fmt.Sprintf("%d per instance", fn.Concurrency)
}

// instancesNow is what runs of the function on the server that answered:
// "1 ready of 2 desired, 3 in flight"; "" when it did not say.
func instancesNow(fn *client.Function) string {
	in := fn.Instances
	if in == nil {
		return ""
	}
	return fmt.Sprintf("%d ready of %d desired, %d in flight", in.Ready, in.Desired, in.InFlight)
}

// lastBuildFailure says which newer version failed to build and why, while
// an older one serves: "v2 — SyntaxError: ..."; "" when the newest built.
func lastBuildFailure(fn *client.Function) string {
	if fn.LastBuildFailure == nil {
		return ""
	}
	return fmt.Sprintf("v%d — %s (sless fn versions %s)", fn.LastBuildFailure.Version, headline(fn.LastBuildFailure.Message), fn.Name)
}
