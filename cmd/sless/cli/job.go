package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/httpapi/client"
)

func jobCommand() *cobra.Command {
	c := &conn{}
	cmd := &cobra.Command{Use: "job", Short: "Run functions once, as jobs, and see their results",
		Example: "  sless job run hello --name once --event '{\"name\": \"job\"}' --wait\n  sless job rerun once --wait"}
	c.bind(cmd)
	notFound := func(name string) string { return fmt.Sprintf("job %q", name) }
	var name, event string
	var runWait, rerunWait waitFlags
	run := &cobra.Command{
		Use:     "run FN --name JOB [--event JSON] [--wait]",
		Short:   "Run a function once with an event; with --wait, print its result (exit 1 when it failed)",
		Example: `  sless job run hello --name once --event '{"name": "sless"}' --wait`,
		Args:    cobra.ExactArgs(1),
		RunE: c.runE(func(cmd *cobra.Command, args []string, cl *client.Client, url string) error {
			if name == "" {
				return fmt.Errorf("--name is required: the job's name (run it again with sless job rerun NAME)")
			}
			var ev json.RawMessage
			if event != "" {
				if !json.Valid([]byte(event)) {
					return fmt.Errorf("--event is not JSON: %s", event)
				}
				ev = json.RawMessage(event)
			}
			j, err := cl.CreateJob(cmd.Context(), client.CreateJobRequest{Name: name, Function: args[0], Event: ev, RunID: 1})
			if err != nil {
				return explain(err, url, "", "")
			}
			return c.finish(cmd, cl, url, j, runWait)
		}),
	}
	run.Flags().StringVar(&name, "name", "", "the job's name (required)")
	run.Flags().StringVar(&event, "event", "", "the event, as JSON (default {})")
	runWait.bind(run, "wait for the run and print its result")

	rerun := &cobra.Command{
		Use: "rerun NAME", Short: "Run a job again (raises its run_id)", Args: cobra.ExactArgs(1),
		Example: "  sless job rerun once --wait",
		RunE: c.runE(func(cmd *cobra.Command, args []string, cl *client.Client, url string) error {
			j, err := cl.GetJob(cmd.Context(), args[0])
			if err != nil {
				return explain(err, url, notFound(args[0]), "sless job ls")
			}
			if j, err = cl.SetJobRunID(cmd.Context(), args[0], j.RunID+1); err != nil {
				return explain(err, url, notFound(args[0]), "sless job ls")
			}
			return c.finish(cmd, cl, url, j, rerunWait)
		}),
	}
	rerunWait.bind(rerun, "wait for the run and print its result")

	var of string
	ls := &cobra.Command{
		Use: "ls", Short: "List the jobs (--function to see one function's)", Args: cobra.NoArgs, Example: "  sless job ls",
		RunE: c.runE(func(cmd *cobra.Command, _ []string, cl *client.Client, url string) error {
			js, err := cl.ListJobs(cmd.Context(), of)
			if err != nil {
				return explain(err, url, "", "")
			}
			return c.print(cmd.OutOrStdout(), js, func(w io.Writer) error { return writeJobs(w, js) })
		}),
	}
	ls.Flags().StringVar(&of, "function", "", "only this function's jobs")
	get := &cobra.Command{
		Use: "get NAME", Short: "Show a job: its latest run's phase, result or error, and output", Args: cobra.ExactArgs(1),
		Example: "  sless job get once",
		RunE: c.runE(func(cmd *cobra.Command, args []string, cl *client.Client, url string) error {
			j, err := cl.GetJob(cmd.Context(), args[0])
			if err != nil {
				return explain(err, url, notFound(args[0]), "sless job ls")
			}
			return c.print(cmd.OutOrStdout(), j, func(w io.Writer) error {
				if err := writeJobs(w, []client.Job{*j}); err != nil {
					return err
				}
				if j.Output != "" {
					fmt.Fprintf(w, "\noutput:\n%s\n", j.Output)
				}
				return nil
			})
		}),
	}
	rm := &cobra.Command{
		Use: "rm NAME", Short: "Delete a job (its unfinished run is cancelled)", Args: cobra.ExactArgs(1), Example: "  sless job rm once",
		RunE: c.runE(func(cmd *cobra.Command, args []string, cl *client.Client, url string) error {
			if err := cl.DeleteJob(cmd.Context(), args[0]); err != nil {
				return explain(err, url, notFound(args[0]), "sless job ls")
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Deleted job %s.\n", args[0])
			return nil
		}),
	}
	cmd.AddCommand(run, rerun, ls, get, rm)
	return cmd
}

// waitFlags are --wait and --wait-timeout of the commands that run a job
// or show an asynchronous invocation.
type waitFlags struct {
	wait    bool
	timeout time.Duration
}

func (w *waitFlags) bind(cmd *cobra.Command, usage string) {
	cmd.Flags().BoolVar(&w.wait, "wait", false, usage)
	cmd.Flags().DurationVar(&w.timeout, "wait-timeout", 10*time.Minute, "how long --wait waits")
}

// finish reports a job run just asked for: at once, or with wait its
// outcome (exit status 1 when it failed, with its error text).
func (c *conn) finish(cmd *cobra.Command, cl *client.Client, url string, j *client.Job, w waitFlags) error {
	timeout := w.timeout
	if !w.wait {
		fmt.Fprintf(cmd.OutOrStdout(), "Job %s: run %d requested (sless job get %s shows its result).\n", j.Name, j.RunID, j.Name)
		return nil
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
	defer cancel()
	runID := j.RunID
	for j.RunID != runID || (j.Phase != domain.JobPhaseSucceeded && j.Phase != domain.JobPhaseFailed) {
		select {
		case <-ctx.Done():
			return fmt.Errorf("job %s: run %d is still %s after %s (sless job get %s)", j.Name, runID, j.Phase, timeout, j.Name)
		case <-time.After(250 * time.Millisecond):
		}
		var err error
		if j, err = cl.GetJob(ctx, j.Name); err != nil {
			return explain(err, url, "", "")
		}
	}
	if j.Phase == domain.JobPhaseFailed {
		return fmt.Errorf("job %s failed: %s", j.Name, j.Message)
	}
	fmt.Fprintln(cmd.OutOrStdout(), j.Message)
	return nil
}

// writeJobs renders jobs as a table.
func writeJobs(w io.Writer, js []client.Job) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tFUNCTION\tRUN\tPHASE\tVERSION\tCOMPLETED\tMESSAGE")
	for _, j := range js {
		done := "-"
		if j.CompletedAt != nil {
			done = j.CompletedAt.UTC().Format(time.RFC3339)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%d\t%s\t%s\n", j.Name, j.Function, j.RunID, j.Phase, j.Version, done, headline(j.Message))
	}
	return tw.Flush()
}
