package cli

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/httpapi/client"
)

// asyncFlags are the flags of `fn invoke --async`.
type asyncFlags struct {
	on             bool
	idempotencyKey string
	callbackURL    string
	changed        func(string) bool
}

func (a *asyncFlags) bind(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.BoolVar(&a.on, "async", false, "queue the call and print its invocation id instead of waiting for the answer")
	fl.StringVar(&a.idempotencyKey, "idempotency-key", "", "with --async: queue once per key (24 h); a repeat prints the invocation accepted before")
	fl.StringVar(&a.callbackURL, "callback-url", "", "with --async: POST the final answer to this URL (on the operator's allow-list)")
	a.changed = fl.Changed
}

// check refuses the async flags without --async, and --async with the
// public URL's flags.
func (a *asyncFlags) check(viaHTTP bool) error {
	switch {
	case !a.on && (a.changed("idempotency-key") || a.changed("callback-url")):
		return errors.New("--idempotency-key and --callback-url are for a queued call: add --async")
	case a.on && viaHTTP:
		return errors.New("--async queues the call through the API: leave out --via-http (through the public URL a client queues with the header X-Sless-Invocation-Type: async)")
	case a.on && a.changed("idempotency-key"):
		if err := domain.ValidateIdempotencyKey(a.idempotencyKey); err != nil {
			return fmt.Errorf("--idempotency-key %q: %s", a.idempotencyKey, messageOf(err))
		}
	}
	return nil
}

// accepted is what `fn invoke --async` prints with -o json|yaml: the API's
// answer, and whether this call queued it (false: its Idempotency-Key named
// an invocation accepted before).
type accepted struct {
	InvocationID string `json:"invocation_id"`
	State        string `json:"state"`
	Created      bool   `json:"created"`
}

// invokeAsync queues a call of fn and prints the invocation's id.
func (c *conn) invokeAsync(cmd *cobra.Command, cl *client.Client, url, fn string, body []byte, f asyncFlags, verbose bool) error {
	start := time.Now()
	acc, err := cl.InvokeAsync(cmd.Context(), fn, body, client.AsyncOptions{IdempotencyKey: f.idempotencyKey, CallbackURL: f.callbackURL})
	if err != nil {
		return explain(asFlagError(err, map[string]string{"Idempotency-Key": "--idempotency-key", "X-Sless-Callback-Url": "--callback-url"}),
			url, fmt.Sprintf("function %q", fn), "sless fn ls")
	}
	if verbose {
		status := http.StatusOK
		if acc.Created {
			status = http.StatusAccepted
		}
		fmt.Fprintf(cmd.ErrOrStderr(), "HTTP %d in %s\n", status, time.Since(start).Round(time.Millisecond))
	}
	out := accepted{InvocationID: acc.InvocationID, State: acc.State, Created: acc.Created}
	return c.print(cmd.OutOrStdout(), out, func(w io.Writer) error {
		show := fmt.Sprintf("sless fn invocation %s %s", fn, acc.InvocationID)
		if acc.Created {
			_, err := fmt.Fprintf(w, "Queued invocation %s of %s (%s --wait waits for its outcome).\n", acc.InvocationID, fn, show)
			return err
		}
		_, err := fmt.Fprintf(w, "Idempotency-Key %q was accepted before: invocation %s of %s, %s (%s shows it).\n",
			f.idempotencyKey, acc.InvocationID, fn, acc.State, show)
		return err
	})
}

// asFlagError names the flag instead of the API's field (a request header)
// in an API error about one of flags (field → flag).
func asFlagError(err error, flags map[string]string) error {
	var apiErr *client.Error
	if !errors.As(err, &apiErr) || flags[apiErr.Field] == "" {
		return err
	}
	return fmt.Errorf("%s: %s", flags[apiErr.Field], strings.TrimPrefix(apiErr.Message, apiErr.Field+": "))
}

func invocationCommand(c *conn) *cobra.Command {
	var wait waitFlags
	cmd := &cobra.Command{
		Use:   "invocation NAME ID",
		Short: "Show an invocation: a queued one's state, attempts and answer (--wait for its outcome)",
		Long: `Show an asynchronous invocation (fn invoke --async): its state (queued, running,
succeeded, failed or dead_lettered), each delivery attempt, the function's last
answer and why it failed. --wait polls until it is finished and exits 1 unless it
succeeded. Finished invocations are kept for 24 hours, dead letters until they are
deleted. The id of a call that was not queued (fn invoke -v prints it) shows its
record of the invocation log instead.`,
		Example: `  sless fn invocation hello 0193a3e0-5f1c-7d2e-9a4b-8c6d0e1f2a3b
  sless fn invocation hello 0193a3e0-5f1c-7d2e-9a4b-8c6d0e1f2a3b --wait --wait-timeout 2m -o json`,
		Args: cobra.ExactArgs(2),
		RunE: c.runE(func(cmd *cobra.Command, args []string, cl *client.Client, url string) error {
			ctx, name, id, w := cmd.Context(), args[0], args[1], cmd.OutOrStdout()
			inv, err := cl.GetAsyncInvocation(ctx, name, id)
			if client.IsNotFound(err) {
				// Not queued: a record of the invocation log, perhaps.
				if rec, recErr := cl.GetInvocation(ctx, name, id); recErr == nil {
					return c.print(w, rec, func(w io.Writer) error { return writeInvocation(ctx, w, cl, name, rec.Invocation) })
				}
				return fmt.Errorf("invocation %q of function %q not found in your namespace (finished invocations are kept 24 hours, dead letters until deleted: sless fn dlq ls %s)", id, name, name)
			}
			if err != nil {
				return explain(err, url, fmt.Sprintf("function %q", name), "sless fn ls")
			}
			var waitErr error
			if wait.wait {
				inv, waitErr = waitFinished(ctx, cl, name, inv, wait.timeout)
			}
			if err := c.print(w, inv, func(w io.Writer) error { return writeAsyncInvocation(w, inv) }); err != nil {
				return err
			}
			switch {
			case waitErr != nil:
				return explain(waitErr, url, "", "")
			case !wait.wait || inv.State == string(domain.AsyncSucceeded):
				return nil
			case inv.State == string(domain.AsyncDead):
				return fmt.Errorf("invocation %s of %s is a dead letter (%s): once the function is fixed, sless fn dlq retry %s %s runs it again",
					inv.InvocationID, name, inv.Error, name, inv.InvocationID)
			}
			return fmt.Errorf("invocation %s of %s failed: %s", inv.InvocationID, name, failure(inv))
		}),
	}
	wait.bind(cmd, "wait until the invocation is finished (exit status 1 unless it succeeded)")
	return cmd
}

// failure says why a failed invocation failed: its error, else the
// function's answer.
func failure(inv *client.AsyncInvocation) string {
	switch {
	case inv.Error != "":
		return inv.Error
	case inv.Response != nil:
		return fmt.Sprintf("the function answered %d %s", inv.Response.Status, http.StatusText(inv.Response.Status))
	}
	return inv.State
}

// waitFinished polls inv until it is finished (succeeded, failed or
// dead_lettered) and returns it; after timeout it returns inv as it is
// with an error saying so.
func waitFinished(ctx context.Context, cl *client.Client, fn string, inv *client.AsyncInvocation, timeout time.Duration) (*client.AsyncInvocation, error) {
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for !domain.AsyncState(inv.State).Finished() {
		select {
		case <-wctx.Done():
			if ctx.Err() != nil {
				return inv, ctx.Err()
			}
			return inv, fmt.Errorf("invocation %s of %s is still %s after --wait-timeout %s, attempts so far: %d (sless fn invocation %s %s --wait waits again)",
				inv.InvocationID, fn, inv.State, timeout, attempts(inv), fn, inv.InvocationID)
		case <-time.After(asyncPoll):
		}
		next, err := cl.GetAsyncInvocation(wctx, fn, inv.InvocationID)
		if err != nil && wctx.Err() == nil {
			return inv, err
		}
		if err == nil {
			inv = next
		}
	}
	return inv, nil
}

// asyncPoll is how often `fn invocation --wait` asks.
const asyncPoll = 250 * time.Millisecond

// writeAsyncInvocation renders an asynchronous invocation: "key: value"
// lines, a table of its attempts and the function's last answer's body.
func writeAsyncInvocation(w io.Writer, inv *client.AsyncInvocation) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	finished, response, callback := "-", "", ""
	if inv.FinishedAt != nil {
		finished = inv.FinishedAt.UTC().Format(time.RFC3339)
	}
	if r := inv.Response; r != nil {
		response = fmt.Sprintf("%d %s", r.Status, http.StatusText(r.Status))
	}
	if cb := inv.Callback; cb != nil {
		callback = cb.URL + " (" + first(cb.State, "not sent yet") + ")"
	}
	rows := [][2]string{
		{"invocation", inv.InvocationID},
		{"function", inv.Function},
		{"state", colour(w, inv.State)},
		{"request", fmt.Sprintf("%s %s (%d bytes)", inv.Request.Method, inv.Request.Path, inv.Request.BodyBytes)},
		{"idempotency key", inv.IdempotencyKey},
		{"enqueued", inv.EnqueuedAt.UTC().Format(time.RFC3339)},
		{"finished", finished},
		{"attempts", fmt.Sprint(attempts(inv))},
		{"error", inv.Error},
		{"response", response},
		{"callback", callback},
	}
	for _, r := range rows {
		if r[1] != "" {
			fmt.Fprintf(tw, "%s:\t%s\n", r[0], r[1])
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(inv.Attempts) > 0 {
		fmt.Fprintln(w)
		tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ATTEMPT\tSTARTED\tDURATION\tSTATUS\tERROR")
		for _, a := range inv.Attempts {
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\n", a.Attempt, a.StartedAt.UTC().Format(time.RFC3339),
				a.EndedAt.Sub(a.StartedAt).Round(time.Millisecond), statusOrDash(a.Status), headline(a.Error))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	r := inv.Response
	switch {
	case r == nil || r.Body == "":
		return nil
	case r.BodyEncoding == "base64":
		b, _ := base64.StdEncoding.DecodeString(r.Body)
		_, err := fmt.Fprintf(w, "\nresponse body: %d bytes, not text (-o json shows them in base64)\n", len(b))
		return err
	}
	_, err := fmt.Fprintf(w, "\nresponse body:\n%s\n", strings.TrimSuffix(r.Body, "\n"))
	return err
}

// attempts is how many delivery attempts inv had: the number of its last
// (an invocation given up for its age records that as a row of its own,
// under the number of the attempt before).
func attempts(inv *client.AsyncInvocation) int {
	if len(inv.Attempts) == 0 {
		return 0
	}
	return inv.Attempts[len(inv.Attempts)-1].Attempt
}

// statusOrDash is an attempt's status, "-" for none (no answer).
func statusOrDash(status int) string {
	if status == 0 {
		return "-"
	}
	return fmt.Sprint(status)
}
