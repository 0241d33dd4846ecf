package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/slessio/sless/httpapi/auth"
)

// runToken implements `sless token --sub alice [--ttl 24h] [--admin]`: a token
// signed with the dev key of the data dir (or SLESS_JWT_SECRET).
func runToken(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("token", flag.ContinueOnError)
	fs.SetOutput(stderr)
	c := bindConfig(fs)
	sub := fs.String("sub", "", "subject (user id) of the token; its namespace is derived from it (required)")
	ttl := fs.Duration("ttl", 24*time.Hour, "lifetime of the token")
	admin := fs.Bool("admin", false, "mark the token as an operator's (the admin claim)")
	quiet := fs.Bool("q", false, "print only the token")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *sub == "" {
		fs.Usage()
		return fmt.Errorf("--sub is required")
	}
	secret, err := signingKey(c)
	if err != nil {
		return err
	}
	var extra map[string]any
	if *admin {
		extra = map[string]any{c.AdminClaim: true}
	}
	tok, err := auth.Mint(secret, *sub, *ttl, extra)
	if err != nil {
		return err
	}
	if *quiet {
		fmt.Fprintln(stdout, tok)
		return nil
	}
	fmt.Fprintf(stdout, "%s\n", tok)
	fmt.Fprintf(stderr, "namespace: %s (expires in %s)\n", auth.Namespace(*sub), *ttl)
	return nil
}

// signingKey returns the HS256 secret: SLESS_JWT_SECRET, or the dev key kept
// in the data dir (created on first use).
func signingKey(c *config) ([]byte, error) {
	if c.JWTSecret != "" {
		return []byte(c.JWTSecret), nil
	}
	if err := os.MkdirAll(c.DataDir, 0o755); err != nil {
		return nil, err
	}
	return auth.LoadOrCreateKey(c.DataDir)
}
