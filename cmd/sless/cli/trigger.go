package cli

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/httpapi/client"
)

func triggerCommand() *cobra.Command {
	c := &conn{}
	cmd := &cobra.Command{Use: "trigger", Short: "Manage the http and cron triggers of your functions",
		Example: "  sless trigger ls\n  sless trigger disable hello-http"}
	c.bind(cmd)
	notFound := func(name string) string { return fmt.Sprintf("trigger %q", name) }
	var typ, function, schedule, cron string
	var disabled, http bool
	create := &cobra.Command{
		Use:   "create NAME --function FN [--http | --cron SCHEDULE]",
		Short: "Create a trigger: http (a public URL) or cron (a schedule in UTC)",
		Example: `  sless trigger create hello-http --function hello --http
  sless trigger create nightly --function report --cron "0 3 * * *"
  sless trigger create nightly --function report --type cron --schedule "0 3 * * *"`,
		Args: cobra.ExactArgs(1),
		RunE: c.runE(func(cmd *cobra.Command, args []string, cl *client.Client, url string) error {
			// --cron and --http as `fn deploy` takes them; --type and
			// --schedule say the same at length. The shorthands name their
			// types on purpose (a switch on the type, not the type table):
			// any type, a new one too, is created with --type.
			switch {
			case cron != "" && (http || cmd.Flags().Changed("type") && typ != string(domain.TriggerCron)):
				return fmt.Errorf("--cron makes a cron trigger: leave out --http and --type")
			case cron != "":
				typ, schedule = string(domain.TriggerCron), cron
			case http && cmd.Flags().Changed("type") && typ != string(domain.TriggerHTTP):
				return fmt.Errorf("--http makes an http trigger: leave out --type %s", typ)
			case http:
				typ = string(domain.TriggerHTTP)
			}
			t, err := cl.CreateTrigger(cmd.Context(), client.CreateTriggerRequest{Name: args[0], Type: domain.TriggerType(typ),
				Function: function, Schedule: schedule, Enabled: client.Ptr(!disabled)})
			if err != nil {
				return explain(err, url, "", "")
			}
			return c.print(cmd.OutOrStdout(), t, func(w io.Writer) error { return writeTriggers(w, []client.Trigger{*t}) })
		}),
	}
	create.Flags().BoolVar(&http, "http", false, "an http trigger: a public URL (the default)")
	create.Flags().StringVar(&cron, "cron", "", "a cron trigger on this five-field schedule in UTC, e.g. \"*/5 * * * *\"")
	create.Flags().StringVar(&typ, "type", "http", "http or cron")
	create.Flags().StringVar(&function, "function", "", "the function the trigger runs (required)")
	create.Flags().StringVar(&schedule, "schedule", "", "five-field cron schedule in UTC (type cron)")
	create.Flags().BoolVar(&disabled, "disabled", false, "create it disabled")
	_ = create.MarkFlagRequired("function")

	var of string
	ls := &cobra.Command{
		Use: "ls", Short: "List the triggers (--function to see one function's)", Args: cobra.NoArgs,
		Example: "  sless trigger ls --function hello",
		RunE: c.runE(func(cmd *cobra.Command, _ []string, cl *client.Client, url string) error {
			ts, err := cl.ListTriggers(cmd.Context(), of)
			if err != nil {
				return explain(err, url, "", "")
			}
			return c.print(cmd.OutOrStdout(), ts, func(w io.Writer) error { return writeTriggers(w, ts) })
		}),
	}
	ls.Flags().StringVar(&of, "function", "", "only this function's triggers")

	get := &cobra.Command{
		Use: "get NAME", Short: "Show a trigger", Args: cobra.ExactArgs(1), Example: "  sless trigger get hello-http",
		RunE: c.runE(func(cmd *cobra.Command, args []string, cl *client.Client, url string) error {
			t, err := cl.GetTrigger(cmd.Context(), args[0])
			if err != nil {
				return explain(err, url, notFound(args[0]), "sless trigger ls")
			}
			return c.print(cmd.OutOrStdout(), t, func(w io.Writer) error { return writeTriggers(w, []client.Trigger{*t}) })
		}),
	}
	enable := func(use string, on bool, short string) *cobra.Command {
		return &cobra.Command{
			Use: use + " NAME", Short: short, Args: cobra.ExactArgs(1), Example: "  sless trigger " + use + " hello-http",
			RunE: c.runE(func(cmd *cobra.Command, args []string, cl *client.Client, url string) error {
				t, err := cl.SetTriggerEnabled(cmd.Context(), args[0], on)
				if err != nil {
					return explain(err, url, notFound(args[0]), "sless trigger ls")
				}
				fmt.Fprintf(cmd.OutOrStdout(), "Trigger %s is %s.\n", t.Name, map[bool]string{true: "enabled", false: "disabled"}[t.Enabled])
				return nil
			}),
		}
	}
	rm := &cobra.Command{
		Use: "rm NAME", Short: "Delete a trigger", Args: cobra.ExactArgs(1), Example: "  sless trigger rm hello-http",
		RunE: c.runE(func(cmd *cobra.Command, args []string, cl *client.Client, url string) error {
			if err := cl.DeleteTrigger(cmd.Context(), args[0]); err != nil {
				return explain(err, url, notFound(args[0]), "sless trigger ls")
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Deleted trigger %s.\n", args[0])
			return nil
		}),
	}
	cmd.AddCommand(create, ls, get, enable("enable", true, "Start a trigger (an http function serves again, a schedule resumes)"),
		enable("disable", false, "Stop a trigger without deleting it (an http function scales to zero)"), rm)
	return cmd
}

// writeTriggers renders triggers as a table.
func writeTriggers(w io.Writer, ts []client.Trigger) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tTYPE\tFUNCTION\tENABLED\tACTIVE\tSCHEDULE / URL")
	for _, t := range ts {
		where := t.URL
		if info, _ := t.Type.Info(); info.Scheduled {
			where = t.Schedule
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%t\t%t\t%s\n", t.Name, t.Type, t.Function, t.Enabled, t.Active, where)
	}
	return tw.Flush()
}
