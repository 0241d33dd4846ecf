package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/slessio/sless/httpapi/client"
)

// loginCommand is `sless login`: check the token against the API, then keep
// URL and token in the config file for the other commands.
func loginCommand() *cobra.Command {
	c := &conn{}
	cmd := &cobra.Command{
		Use:   "login",
		Short: "Check a token against the API and keep it, with the URL, for the other commands",
		Long: `Check a token against the API (it ensures the token's namespace) and write
the URL and the token to the config file (mode 0600): $XDG_CONFIG_HOME/sless/config.yaml,
by default ~/.config/sless/config.yaml. The namespace comes from the token.`,
		Example: "  sless login --url http://localhost:8080 --token eyJhbGciOi...",
		Args:    cobra.NoArgs,
		RunE: c.runE(func(cmd *cobra.Command, _ []string, cl *client.Client, url string) error {
			ns, err := cl.EnsureNamespace(cmd.Context())
			if err != nil {
				return explain(err, url, "", "")
			}
			_, token, _ := c.resolve()
			p, err := saveConfig(Config{URL: url, Token: token})
			if err != nil {
				return fmt.Errorf("write the config file: %w", err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Logged in to %s, namespace %s (saved in %s).\n", url, ns.Namespace, p)
			return nil
		}),
	}
	c.bind(cmd)
	return cmd
}
