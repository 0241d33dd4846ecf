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
	var verbose bool
	cmd := &cobra.Command{
		Use:   "invoke NAME",
		Short: "Call a function through its public URL and print the answer's body",
		Long: `Call a function through the platform's public /fn URL, as any HTTP client
would (the function needs an enabled http trigger: sless fn deploy --http), and
print the body of the answer. -v also prints the status, the duration, the
version that answered and whether it was a cold start. The exit status is 1
when the answer's status is 400 or more.`,
		Example: `  sless fn invoke hello --data '{"name": "sless"}'
  sless fn invoke hello --data @event.json -v
  echo '{}' | sless fn invoke hello --data - --path /items -H 'X-Trace: 1'`,
		Args: cobra.ExactArgs(1),
		RunE: c.runE(func(cmd *cobra.Command, args []string, cl *client.Client, url string) error {
			body, err := readData(data, cmd.InOrStdin())
			if err != nil {
				return err
			}
			if method == "" {
				method = http.MethodGet
				if body != nil {
					method = http.MethodPost
				}
			}
			if path != "" && !strings.HasPrefix(path, "/") {
				path = "/" + path
			}
			target := strings.TrimRight(url, "/") + "/fn/" + cl.Namespace() + "/" + args[0] + path
			var rd io.Reader
			if body != nil {
				rd = strings.NewReader(string(body))
			}
			req, err := http.NewRequestWithContext(cmd.Context(), strings.ToUpper(method), target, rd)
			if err != nil {
				return err
			}
			if body != nil {
				req.Header.Set("Content-Type", "application/json")
			}
			for _, h := range headers {
				k, v, ok := strings.Cut(h, ":")
				if !ok {
					return fmt.Errorf("-H %q: write it as Name: value", h)
				}
				req.Header.Add(strings.TrimSpace(k), strings.TrimSpace(v))
			}
			start := time.Now()
			resp, err := invokeClient.Do(req)
			if err != nil {
				return explain(err, url, "", "")
			}
			defer resp.Body.Close()
			took := time.Since(start)
			if _, err := io.Copy(cmd.OutOrStdout(), resp.Body); err != nil {
				return err
			}
			if verbose {
				fmt.Fprintf(cmd.ErrOrStderr(), "\nHTTP %d in %s%s\n", resp.StatusCode, took.Round(time.Millisecond),
					invocationInfo(cmd.Context(), cl, args[0], resp.Header.Get(proxy.InvocationHeader)))
			}
			if resp.StatusCode >= 400 {
				return fmt.Errorf("%s answered %d %s", args[0], resp.StatusCode, http.StatusText(resp.StatusCode))
			}
			return nil
		}),
	}
	fl := cmd.Flags()
	fl.StringVarP(&data, "data", "d", "", "request body: JSON text, @FILE, or - for standard input")
	fl.StringVarP(&method, "method", "X", "", "HTTP method (default: POST with --data, else GET)")
	fl.StringVar(&path, "path", "", "path below the function's URL, e.g. /items?limit=2")
	fl.StringArrayVarP(&headers, "header", "H", nil, "request header 'Name: value' (repeatable)")
	fl.BoolVarP(&verbose, "verbose", "v", false, "print the status, duration, version and cold start too")
	return cmd
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
