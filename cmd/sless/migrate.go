package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/slessio/sless/migrations"
)

// runMigrate implements `sless migrate up|status`.
func runMigrate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("migrate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprintln(stderr, "usage: sless migrate [flags] up|status"); fs.PrintDefaults() }
	c := bindConfig(fs)
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 || (pos[0] != "up" && pos[0] != "status") {
		fs.Usage()
		return flag.ErrHelp
	}
	db, err := openDatabase(ctx, c, false, stderr)
	if err != nil {
		return err
	}
	defer db.Close(ctx)
	if pos[0] == "up" {
		if err := migrations.Up(ctx, db.SQL()); err != nil {
			return err
		}
		fmt.Fprintln(stdout, "migrations applied")
	}
	return migrations.Status(ctx, db.SQL(), stdout)
}
