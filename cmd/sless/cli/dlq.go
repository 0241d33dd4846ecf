package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/slessio/sless/httpapi/client"
)

// dlqCommand is `sless fn dlq`: the dead letters of a function.
func dlqCommand(c *conn) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "dlq",
		Short: "List, retry and delete a function's dead letters (queued invocations given up)",
		Long: `A queued invocation (fn invoke --async) becomes a dead letter when its last
allowed attempt fails with a 429, a 5xx or no answer (the function's
--async-max-retries), or when it waits longer than its --async-max-event-age.
Dead letters are kept until deleted; a retry queues one again under its id, its
attempts continuing.`,
		Example: `  sless fn dlq ls hello
  sless fn dlq retry hello 0193a3e0-5f1c-7d2e-9a4b-8c6d0e1f2a3b
  sless fn dlq rm hello --all`,
	}
	cmd.AddCommand(dlqListCommand(c), dlqRetryCommand(c), dlqRemoveCommand(c))
	return cmd
}

func dlqListCommand(c *conn) *cobra.Command {
	var limit int
	var cursor string
	var all bool
	cmd := &cobra.Command{
		Use:   "ls NAME",
		Short: "List a function's dead letters, newest first",
		Example: `  sless fn dlq ls hello
  sless fn dlq ls hello --all -o json`,
		Args: cobra.ExactArgs(1),
		RunE: c.runE(func(cmd *cobra.Command, args []string, cl *client.Client, url string) error {
			if limit < 1 {
				return fmt.Errorf("--limit %d: list 1 or more dead letters a page", limit)
			}
			name := args[0]
			page, err := deadLetters(cmd.Context(), cl, name, limit, cursor, all)
			if err != nil {
				return explain(err, url, fmt.Sprintf("function %q", name), "sless fn ls")
			}
			return c.print(cmd.OutOrStdout(), page, func(w io.Writer) error {
				if len(page.Invocations) == 0 {
					fmt.Fprintf(cmd.ErrOrStderr(), "No dead letters of %s.\n", name)
					return nil
				}
				if err := writeDeadLetters(w, page.Invocations); err != nil {
					return err
				}
				if page.NextCursor != "" {
					fmt.Fprintf(cmd.ErrOrStderr(), "More: sless fn dlq ls %s --cursor %s (or --all)\n", name, page.NextCursor)
				}
				return nil
			})
		}),
	}
	cmd.Flags().IntVar(&limit, "limit", 100, "how many dead letters a page (the API takes at most 1000)")
	cmd.Flags().StringVar(&cursor, "cursor", "", "start at this page (the next_cursor of the one before)")
	cmd.Flags().BoolVar(&all, "all", false, "every page, not only the first")
	return cmd
}

// deadLetters returns a page of fn's dead letters from cursor, or with all
// every page from there as one.
func deadLetters(ctx context.Context, cl *client.Client, fn string, limit int, cursor string, all bool) (*client.AsyncPage, error) {
	page, err := cl.ListDeadLetters(ctx, fn, limit, cursor)
	for err == nil && all && page.NextCursor != "" {
		var next *client.AsyncPage
		if next, err = cl.ListDeadLetters(ctx, fn, limit, page.NextCursor); err == nil {
			page.Invocations, page.NextCursor = append(page.Invocations, next.Invocations...), next.NextCursor
		}
	}
	return page, err
}

// writeDeadLetters renders dead letters as a table: the last attempt's
// status ("-": no answer) and why it was given up.
func writeDeadLetters(w io.Writer, invs []client.AsyncInvocation) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tENQUEUED\tATTEMPTS\tLAST STATUS\tERROR")
	for _, inv := range invs {
		status, why := "-", inv.Error
		if n := len(inv.Attempts); n > 0 {
			last := inv.Attempts[n-1]
			status = statusOrDash(last.Status)
			if last.Error != "" && last.Error != why {
				why += " (last: " + headline(last.Error) + ")"
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\n", inv.InvocationID, inv.EnqueuedAt.UTC().Format(time.RFC3339), attempts(&inv), status, why)
	}
	return tw.Flush()
}

func dlqRetryCommand(c *conn) *cobra.Command {
	var all bool
	cmd := &cobra.Command{
		Use:   "retry NAME (ID | --all)",
		Short: "Queue a dead letter again under its id (its attempts continue), or every one with --all",
		Example: `  sless fn dlq retry hello 0193a3e0-5f1c-7d2e-9a4b-8c6d0e1f2a3b
  sless fn dlq retry hello --all`,
		Args: cobra.RangeArgs(1, 2),
		RunE: c.runE(func(cmd *cobra.Command, args []string, cl *client.Client, url string) error {
			if err := idOrAll(args, all, "retry"); err != nil {
				return err
			}
			ctx, name, w := cmd.Context(), args[0], cmd.OutOrStdout()
			if !all {
				inv, err := cl.RetryDeadLetter(ctx, name, args[1])
				if err != nil {
					return explain(err, url, fmt.Sprintf("dead letter %q of function %q", args[1], name), "sless fn dlq ls "+name)
				}
				return c.print(w, inv, func(w io.Writer) error {
					_, err := fmt.Fprintf(w, "Queued dead letter %s of %s again: attempt %d follows (sless fn invocation %s %s --wait waits for its outcome).\n",
						inv.InvocationID, name, attempts(inv)+1, name, inv.InvocationID)
					return err
				})
			}
			page, err := deadLetters(ctx, cl, name, 1000, "", true)
			if err != nil {
				return explain(err, url, fmt.Sprintf("function %q", name), "sless fn ls")
			}
			retried := []client.AsyncInvocation{}
			for _, dl := range page.Invocations {
				inv, err := cl.RetryDeadLetter(ctx, name, dl.InvocationID)
				if client.IsNotFound(err) {
					continue // retried or deleted meanwhile
				}
				if err != nil {
					return fmt.Errorf("%w (%d retried before it)", explain(err, url, "", ""), len(retried))
				}
				retried = append(retried, *inv)
			}
			return c.print(w, retried, func(w io.Writer) error {
				if len(retried) == 0 {
					_, err := fmt.Fprintf(w, "No dead letters of %s to retry.\n", name)
					return err
				}
				_, err := fmt.Fprintf(w, "Queued %s of %s again (sless fn invocation %s ID shows one).\n", deadLetterCount(len(retried)), name, name)
				return err
			})
		}),
	}
	cmd.Flags().BoolVar(&all, "all", false, "retry every dead letter of the function")
	return cmd
}

func dlqRemoveCommand(c *conn) *cobra.Command {
	var all bool
	cmd := &cobra.Command{
		Use:   "rm NAME (ID | --all)",
		Short: "Delete a dead letter, or every one with --all",
		Example: `  sless fn dlq rm hello 0193a3e0-5f1c-7d2e-9a4b-8c6d0e1f2a3b
  sless fn dlq rm hello --all`,
		Args: cobra.RangeArgs(1, 2),
		RunE: c.runE(func(cmd *cobra.Command, args []string, cl *client.Client, url string) error {
			if err := idOrAll(args, all, "delete"); err != nil {
				return err
			}
			ctx, name := cmd.Context(), args[0]
			n := 1
			var err error
			if all {
				n, err = cl.DeleteDeadLetters(ctx, name)
				err = explain(err, url, fmt.Sprintf("function %q", name), "sless fn ls")
			} else if err = cl.DeleteDeadLetter(ctx, name, args[1]); err != nil {
				err = explain(err, url, fmt.Sprintf("dead letter %q of function %q", args[1], name), "sless fn dlq ls "+name)
			}
			if err != nil {
				return err
			}
			return c.print(cmd.OutOrStdout(), map[string]int{"deleted": n}, func(w io.Writer) error {
				if !all {
					_, err := fmt.Fprintf(w, "Deleted dead letter %s of %s.\n", args[1], name)
					return err
				}
				_, err := fmt.Fprintf(w, "Deleted %s of %s.\n", deadLetterCount(n), name)
				return err
			})
		}),
	}
	cmd.Flags().BoolVar(&all, "all", false, "delete every dead letter of the function")
	return cmd
}

// idOrAll refuses a dlq command (verb: retry, delete) given neither an ID
// nor --all, or both.
func idOrAll(args []string, all bool, verb string) error {
	switch {
	case len(args) == 1 && !all:
		return fmt.Errorf("say which dead letter to %s: its ID (sless fn dlq ls %s lists them), or --all for every one", verb, args[0])
	case len(args) == 2 && all:
		return errors.New("give an ID or --all, not both")
	}
	return nil
}

// deadLetterCount is "1 dead letter", "3 dead letters".
func deadLetterCount(n int) string {
	if n == 1 {
		return "1 dead letter"
	}
	return fmt.Sprintf("%d dead letters", n)
}
