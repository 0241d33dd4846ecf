package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/slessio/sless/store"
)

// runProjections implements `sless projections rebuild`.
func runProjections(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("projections", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: sless projections [flags] rebuild\n\nTruncates every read model and replays all events (appends wait meanwhile).")
		fs.PrintDefaults()
	}
	c := bindConfig(fs)
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 || pos[0] != "rebuild" {
		fs.Usage()
		return flag.ErrHelp
	}
	db, err := openDatabase(ctx, c, true, stderr)
	if err != nil {
		return err
	}
	defer db.Close(ctx)
	start := time.Now()
	n, err := store.New(db.Pool, nil).RebuildProjections(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "rebuilt the read models from %d events in %s\n", n, time.Since(start).Round(time.Millisecond))
	return nil
}
