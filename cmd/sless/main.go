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
)

const usage = `sless — a self-hosted serverless functions platform

Usage:
  sless dev                     run everything locally on embedded defaults
  sless serve                   run the control plane (API, workers) against DATABASE_URL and S3_ENDPOINT
  sless migrate up|status       apply or show database migrations
  sless projections rebuild     truncate the read models and replay every event
  sless token --sub NAME        print a token signed with the dev key

Run "sless <command> -h" for the flags of a command. Configuration comes from
flags and the environment (see README.md, "Configuration").
`

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

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return flag.ErrHelp
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "migrate":
		return runMigrate(ctx, rest, stdout, stderr)
	case "projections":
		return runProjections(ctx, rest, stdout, stderr)
	case "token":
		return runToken(ctx, rest, stdout, stderr)
	case "dev":
		return runDev(ctx, rest, stdout, stderr)
	case "serve":
		return runServe(ctx, rest, stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	default:
		fmt.Fprint(stderr, usage)
		return fmt.Errorf("unknown command %q", cmd)
	}
}
