package cli

import (
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/slessio/sless/httpapi/client"
)

// conn holds the connection flags of the client commands.
type conn struct {
	url, token string
	output     string // -o: text, json or yaml
}

// bind adds --url and --token to cmd and its subcommands.
func (c *conn) bind(cmd *cobra.Command) {
	cmd.PersistentFlags().StringVar(&c.url, "url", "", "API base URL (default: "+EnvURL+", the login's, or "+DefaultURL+")")
	cmd.PersistentFlags().StringVar(&c.token, "token", "", "bearer token (default: "+EnvToken+" or the login's)")
	cmd.PersistentFlags().StringVarP(&c.output, "output", "o", "text", "output format: text, json or yaml")
}

// resolve returns the URL and token: flags, then the environment, then the
// config file, then the defaults.
func (c *conn) resolve() (url, token string, err error) {
	cfg, _, err := loadConfig()
	if err != nil {
		return "", "", err
	}
	return first(c.url, os.Getenv(EnvURL), cfg.URL, DefaultURL), first(c.token, os.Getenv(EnvToken), cfg.Token), nil
}

// client returns an API client for the resolved URL and token; without a
// token it says how to get one.
func (c *conn) client() (*client.Client, string, error) {
	url, token, err := c.resolve()
	if err != nil {
		return nil, "", err
	}
	if token == "" {
		return nil, url, errors.New("no token: run `sless login --url " + url + " --token TOKEN` (`sless dev` prints the line for its demo user), or set " + EnvToken)
	}
	cl, err := client.New(url, token, client.WithUserAgent("sless-cli"))
	if err != nil {
		return nil, url, fmt.Errorf("%v (is the token a JWT? `sless token --sub NAME` makes one)", err)
	}
	return cl, url, nil
}

// first returns the first non-empty value.
func first(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}

// explain turns an API call's error into a message that says what to do
// next. what names the thing the call was about ("function \"hello\""),
// used for a 404.
func explain(err error, url, what, list string) error {
	var apiErr *client.Error
	switch {
	case err == nil:
		return nil
	case errors.As(err, &apiErr) && apiErr.NotAPI():
		return fmt.Errorf("%s does not answer like a sless API (HTTP %d, %s): check --url / %s (`sless dev` prints the address)",
			url, apiErr.Status, apiErr.ContentType, EnvURL)
	case errors.As(err, &apiErr) && apiErr.Status == 401:
		return fmt.Errorf("the API at %s rejected the token (401): %s — get a token (`sless token --sub NAME` where the platform runs, or the one `sless dev` prints) and run `sless login --url %s --token TOKEN`", url, apiErr.Message, url)
	case errors.As(err, &apiErr) && apiErr.Status == 404 && what != "":
		return fmt.Errorf("%s not found in your namespace — run: %s", what, list)
	case errors.As(err, &apiErr):
		// The API's message names its field already ("memory_mb: ...").
		return fmt.Errorf("%s (HTTP %d %s)", apiErr.Message, apiErr.Status, apiErr.Code)
	case errors.Is(err, syscall.ECONNREFUSED):
		return fmt.Errorf("cannot reach the sless API at %s (connection refused): start it with `go tool task dev` (or `sless dev`), or pass --url / set %s", url, EnvURL)
	}
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		return fmt.Errorf("cannot reach the sless API at %s (%v): check --url / %s", url, dnsErr, EnvURL)
	}
	return err
}

// runE makes a command's RunE that resolves the API client first.
func (c *conn) runE(run func(cmd *cobra.Command, args []string, cl *client.Client, url string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		cl, url, err := c.client()
		if err != nil {
			return err
		}
		return run(cmd, args, cl, url)
	}
}
