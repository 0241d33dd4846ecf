package cli

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/slessio/sless/httpapi/client"
)

func logsCommand(c *conn) *cobra.Command {
	var since time.Duration
	var status string
	var limit int
	var follow bool
	cmd := &cobra.Command{
		Use:   "logs NAME",
		Short: "Show a function's invocations (HTTP, cron, job) with their captured output",
		Example: `  sless fn logs hello
  sless fn logs hello --since 1h --status 5xx
  sless fn logs hello --follow`,
		Args: cobra.ExactArgs(1),
		RunE: c.runE(func(cmd *cobra.Command, args []string, cl *client.Client, url string) error {
			ctx, name, w := cmd.Context(), args[0], cmd.OutOrStdout()
			q := client.InvocationQuery{Status: status, Limit: limit}
			if since > 0 {
				q.Since = time.Now().Add(-since)
			}
			page, err := cl.ListInvocations(ctx, name, q)
			// The log is written off the request path, within about a second
			// of a call: `fn invoke` and then at once `fn logs` must show it.
			for wait := logWriteDelay; err == nil && len(page.Invocations) == 0 && !follow && wait > 0; wait -= logPoll {
				time.Sleep(logPoll)
				page, err = cl.ListInvocations(ctx, name, q)
			}
			if err != nil {
				return explain(err, url, fmt.Sprintf("function %q", name), "sless fn ls")
			}
			if c.output != "" && c.output != "text" && !follow {
				return c.print(w, page.Invocations, nil)
			}
			seen := map[string]bool{}
			last := q.Since
			show := func(invs []client.Invocation) error {
				slices.Reverse(invs) // oldest first
				for _, inv := range invs {
					if seen[inv.ID] {
						continue
					}
					seen[inv.ID] = true
					if inv.StartedAt.After(last) {
						last = inv.StartedAt
					}
					if err := writeInvocation(ctx, w, cl, name, inv); err != nil {
						return err
					}
				}
				return nil
			}
			if len(page.Invocations) == 0 && !follow {
				fmt.Fprintf(cmd.ErrOrStderr(), "No invocations of %s yet (the log is written within about a second of a call; --follow waits for them).\n", name)
			}
			if err := show(page.Invocations); err != nil {
				return err
			}
			for follow {
				select {
				case <-ctx.Done():
					return nil
				case <-time.After(time.Second):
				}
				page, err := cl.ListInvocations(ctx, name, client.InvocationQuery{Status: status, Since: last, Limit: 1000})
				if err != nil {
					return explain(err, url, fmt.Sprintf("function %q", name), "sless fn ls")
				}
				if err := show(page.Invocations); err != nil {
					return err
				}
			}
			return nil
		}),
	}
	fl := cmd.Flags()
	fl.DurationVar(&since, "since", 0, "only invocations started this long ago or later, e.g. 1h")
	fl.StringVar(&status, "status", "", "only these statuses: 504, 5xx, ok or error")
	fl.IntVar(&limit, "limit", 50, "how many of the newest invocations")
	fl.BoolVarP(&follow, "follow", "f", false, "keep printing new invocations as they come")
	return cmd
}

// writeInvocation prints one invocation and the output it captured.
func writeInvocation(ctx context.Context, w io.Writer, cl *client.Client, fn string, inv client.Invocation) error {
	cold := ""
	if inv.ColdStart {
		cold = " cold"
	}
	what := inv.Trigger
	if inv.Method != "" {
		what += " " + inv.Method + " " + inv.Path
	}
	line := fmt.Sprintf("%s  %d  %7.1f ms  v%d%s  %s", inv.StartedAt.UTC().Format(time.RFC3339), inv.Status, inv.DurationMS, inv.Version, cold, what)
	if inv.Error != "" {
		line += "  error: " + inv.Error
	}
	if _, err := fmt.Fprintln(w, line); err != nil {
		return err
	}
	detail, err := cl.GetInvocation(ctx, fn, inv.ID)
	if err != nil || strings.TrimSpace(detail.Log) == "" {
		return nil
	}
	for _, l := range strings.Split(strings.TrimRight(detail.Log, "\n"), "\n") {
		fmt.Fprintln(w, "    | "+l)
	}
	return nil
}

// How long `fn logs` waits for a first record (the invocation log's
// writer flushes every 100 ms; a busy database takes longer), asking every
// logPoll.
const (
	logWriteDelay = 1500 * time.Millisecond
	logPoll       = 250 * time.Millisecond
)
