package main

import (
	"context"
	"fmt"
	"io"
)

// runServe implements `sless serve`.
func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return fmt.Errorf("serve is not wired yet")
}

// runDev implements `sless dev`.
func runDev(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return fmt.Errorf("dev is not wired yet")
}
