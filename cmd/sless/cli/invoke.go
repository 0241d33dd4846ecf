package cli

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/slessio/sless/httpapi/client"
	"github.com/slessio/sless/httpapi/proxy"
)

func invokeCommand(c *conn) *cobra.Command {
	var data, method, path string
	var headers []string
	var verbose, viaHTTP bool
	var async asyncFlags
	cmd := &cobra.Command{
		Use:   "invoke NAME",
		Short: "Call a function with an event and print its answer's body, or queue the call (--async)",
		Long: `Call any function of yours with an event (--data, as JSON) through the API,
as your token allows, and print the body of its answer: no trigger is needed, a
stopped function is started. --via-http calls it through its public /fn URL
instead, as any HTTP client would (it needs an enabled http trigger), with the
method, path and headers you give. -v also prints the status, the duration, the
version that answered and whether it was a cold start. The exit status is 1 when
the answer's status is 400 or more.

--async queues the call instead and prints the invocation's id at once: the
platform delivers it, retrying a 429, a 5xx or no answer as the function's async
configuration says (fn deploy --async-max-retries ...), and keeps what failed
as a dead letter (sless fn dlq). sless fn invocation NAME ID shows its outcome.
With --idempotency-key the same key queues once (for 24 hours): a repeat prints
the invocation accepted before and its state. --callback-url has the final
answer POSTed there (the operator's allow-list decides which URLs may be used).`,
		Example: `  sless fn invoke hello --data '{"name": "sless"}'
  sless fn invoke report --data @event.json -v
  echo '{}' | sless fn invoke hello --data - --via-http --path /items -H 'X-Trace: 1'
  sless fn invoke report --data @event.json --async --idempotency-key order-1234`,
		Args: cobra.ExactArgs(1),
		RunE: c.runE(func(cmd *cobra.Command, args []string, cl *client.Client, url string) error {
			body, err := readData(data, cmd.InOrStdin())
			if err != nil {
				return err
			}
			if !viaHTTP && (method != "" || path != "" || len(headers) > 0) {
				return fmt.Errorf("--method, --path and --header call the public URL: add --via-http (the function then needs an enabled http trigger)")
			}
			if err := async.check(viaHTTP); err != nil {
				return err
			}
			if async.on {
				return c.invokeAsync(cmd, cl, url, args[0], body, async, verbose)
			}
			start := time.Now()
			var status int
			var id string
			if viaHTTP {
				status, id, err = invokeHTTP(cmd, cl, url, args[0], body, method, path, headers)
			} else {
				status, id, err = invokeAPI(cmd, cl, args[0], body)
			}
			if err != nil {
				return explain(err, url, fmt.Sprintf("function %q", args[0]), "sless fn ls")
			}
			if verbose {
				fmt.Fprintf(cmd.ErrOrStderr(), "\nHTTP %d in %s%s\n", status, time.Since(start).Round(time.Millisecond),
					invocationInfo(cmd.Context(), cl, args[0], id))
			}
			if status >= 400 {
				return fmt.Errorf("%s answered %d %s", args[0], status, http.StatusText(status))
			}
			return nil
		}),
	}
	fl := cmd.Flags()
	fl.StringVarP(&data, "data", "d", "", "the event (request body): JSON text, @FILE, or - for standard input")
	fl.BoolVar(&viaHTTP, "via-http", false, "call the function's public URL (its http trigger) instead of the API")
	fl.StringVarP(&method, "method", "X", "", "with --via-http: HTTP method (default: POST with --data, else GET)")
	fl.StringVar(&path, "path", "", "with --via-http: path below the function's URL, e.g. /items?limit=2")
	fl.StringArrayVarP(&headers, "header", "H", nil, "with --via-http: request header 'Name: value' (repeatable)")
	fl.BoolVarP(&verbose, "verbose", "v", false, "print the status, duration, version and cold start too")
	async.bind(cmd)
	return cmd
}

// invokeAPI calls the function through the API (POST .../invoke) and
// prints its answer's body; it returns the status and the invocation's id.
func invokeAPI(cmd *cobra.Command, cl *client.Client, fn string, body []byte) (int, string, error) {
	res, err := cl.Invoke(cmd.Context(), fn, body, "")
	if err != nil {
		return 0, "", err
	}
	out := &bodyWriter{w: cmd.OutOrStdout()}
	if _, err := out.Write(res.Body); err != nil {
		return 0, "", err
	}
	return res.Status, res.InvocationID, out.end()
}

// invokeHTTP calls the function's public URL and prints the answer's body.
func invokeHTTP(cmd *cobra.Command, cl *client.Client, url, fn string, body []byte, method, path string, headers []string) (int, string, error) {
	if method == "" {
		method = http.MethodGet
		if body != nil {
			method = http.MethodPost
		}
	}
	if path != "" && !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	target := strings.TrimRight(url, "/") + "/fn/" + cl.Namespace() + "/" + fn + path
	var rd io.Reader
	if body != nil {
		rd = strings.NewReader(string(body))
	}
	req, err := http.NewRequestWithContext(cmd.Context(), strings.ToUpper(method), target, rd)
	if err != nil {
		return 0, "", err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for _, h := range headers {
		k, v, ok := strings.Cut(h, ":")
		if !ok {
			return 0, "", fmt.Errorf("-H %q: write it as Name: value", h)
		}
		req.Header.Add(strings.TrimSpace(k), strings.TrimSpace(v))
	}
	resp, err := invokeClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	out := &bodyWriter{w: cmd.OutOrStdout()}
	if _, err := io.Copy(out, resp.Body); err != nil {
		return 0, "", err
	}
	return resp.StatusCode, resp.Header.Get(proxy.InvocationHeader), out.end()
}

// bodyWriter writes a function's answer to w and, on a terminal, ends it
// with a line break when it has none, so that the shell's prompt starts on a
// line of its own; piped or redirected, the body stays byte for byte.
type bodyWriter struct {
	w    io.Writer
	n    int64
	last byte
}

func (b *bodyWriter) Write(p []byte) (int, error) {
	n, err := b.w.Write(p)
	if n > 0 {
		b.n += int64(n)
		b.last = p[n-1]
	}
	return n, err
}

// end adds the line break, see bodyWriter.
func (b *bodyWriter) end() error {
	if b.n == 0 || b.last == '\n' || !isTerminal(b.w) {
		return nil
	}
	_, err := io.WriteString(b.w, "\n")
	return err
}

// invokeClient passes a function's redirect back instead of following it.
var invokeClient = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// readData reads --data: text, @file or - (standard input); nil without it.
func readData(data string, stdin io.Reader) ([]byte, error) {
	switch {
	case data == "":
		return nil, nil
	case data == "-":
		return io.ReadAll(stdin)
	case strings.HasPrefix(data, "@"):
		b, err := os.ReadFile(data[1:])
		if err != nil {
			return nil, fmt.Errorf("--data %s: %w", data, err)
		}
		return b, nil
	}
	return []byte(data), nil
}

// invocationInfo says which version answered and whether it was a cold
// start, from the invocation log (written in batches: it waits a little).
func invocationInfo(ctx context.Context, cl *client.Client, fn, id string) string {
	if id == "" {
		return ""
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	for {
		inv, err := cl.GetInvocation(ctx, fn, id)
		if err == nil {
			cold := "warm"
			if inv.ColdStart {
				cold = "cold start"
			}
			return fmt.Sprintf(", version %d, %s (function %.1f ms, invocation %s)", inv.Version, cold, inv.DurationMS, id)
		}
		select {
		case <-ctx.Done():
			return fmt.Sprintf(" (invocation %s)", id)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
