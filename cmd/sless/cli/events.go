package cli

import (
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/slessio/sless/httpapi/client"
)

func eventsCommand() *cobra.Command {
	c := &conn{}
	var stream string
	var limit int
	var follow bool
	cmd := &cobra.Command{
		Use:   "events",
		Short: "Show the audit log of your namespace (every change, who made it, when)",
		Example: `  sless events --limit 20
  sless events --stream function/hello --follow`,
		Args: cobra.NoArgs,
		RunE: c.runE(func(cmd *cobra.Command, _ []string, cl *client.Client, url string) error {
			ctx, w := cmd.Context(), cmd.OutOrStdout()
			q := client.EventQuery{Stream: stream, Limit: limit}
			page, err := cl.ListEvents(ctx, q)
			if err != nil {
				return explain(err, url, "", "")
			}
			if !follow {
				return c.print(w, page.Events, func(w io.Writer) error { return writeEvents(w, page.Events) })
			}
			for {
				if err := writeEvents(w, page.Events); err != nil {
					return err
				}
				q.After = page.NextAfter
				select {
				case <-ctx.Done():
					return nil
				case <-time.After(time.Second):
				}
				if page, err = cl.ListEvents(ctx, q); err != nil {
					return explain(err, url, "", "")
				}
			}
		}),
	}
	c.bind(cmd)
	cmd.Flags().StringVar(&stream, "stream", "", "only one stream: function/NAME, trigger/NAME, job/NAME or namespace/")
	cmd.Flags().IntVar(&limit, "limit", 100, "how many events (oldest first)")
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "keep printing new events as they come")
	return cmd
}

// writeEvents prints one line per event.
func writeEvents(w io.Writer, evs []client.Event) error {
	for _, e := range evs {
		if _, err := fmt.Fprintf(w, "%s  #%d  %-24s %-40s %s  %s\n", e.RecordedAt.UTC().Format(time.RFC3339), e.Position, e.Type, e.Stream, e.Actor, e.Data); err != nil {
			return err
		}
	}
	return nil
}
