package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/slessio/sless/cmd/sless/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "sless:", err)
		}
		os.Exit(1)
	}
}

// run runs the command line args: the platform's commands (dev, serve,
// migrate, projections, token), which parse their own flags as they always
// did, and the client commands of package cli.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	root := &cobra.Command{
		Use:   "sless",
		Short: "sless — a self-hosted serverless functions platform",
		Long: `sless — a self-hosted serverless functions platform.

Run the platform with "sless dev" (everything local, on embedded defaults) or
"sless serve"; use it with "sless login" and the client commands. Configuration
of the platform comes from flags and the environment (see README.md,
"Configuration"); "sless <command> -h" lists a command's flags.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetArgs(args)
	for _, c := range []struct {
		use, short, example string
		run                 func(context.Context, []string, io.Writer, io.Writer) error
		// server says the command runs until stopped: ctx ending (Ctrl-C,
		// SIGTERM) is how it is meant to end, at whatever point it is.
		server bool
	}{
		{"dev", "Run everything locally on embedded defaults (PostgreSQL, S3, local driver)", "sless dev --listen :8080", runDev, true},
		{"serve", "Run the control plane (API, workers, proxy) against DATABASE_URL and S3_ENDPOINT", "DATABASE_URL=postgres://... S3_ENDPOINT=... SLESS_JWT_SECRET=... sless serve", runServe, true},
		{"migrate", "Apply or show database migrations (up | status)", "sless migrate up", runMigrate, false},
		{"projections", "Truncate the read models and replay every event (rebuild)", "sless projections rebuild", runProjections, false},
		{"secrets", "Rotate the key-encryption key of secrets (rotate-kek: a key file, online; rewrap: inline keys)", "SLESS_SECRETS_KEY=/etc/sless/secrets.key sless secrets rotate-kek", runSecrets, false},
		{"token", "Print a token signed with the dev key (or SLESS_JWT_SECRET)", "sless token --sub alice --ttl 24h", runToken, false},
	} {
		root.AddCommand(&cobra.Command{
			Use:     c.use,
			Short:   c.short,
			Example: "  " + c.example,
			// The command parses its own flags (-h included), unchanged.
			DisableFlagParsing: true,
			RunE: func(cmd *cobra.Command, args []string) error {
				err := c.run(cmd.Context(), args, stdout, stderr)
				if c.server && cmd.Context().Err() != nil {
					// Stopped by the user: a server has no other way to end well,
					// and a start cut short by the stop fails only because of it
					// (initdb killed, a migration canceled), which is no failure.
					return nil
				}
				return err
			},
		})
	}
	cli.AddCommands(root)
	return root.ExecuteContext(ctx)
}
