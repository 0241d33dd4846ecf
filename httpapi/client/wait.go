package client

import (
	"context"
	"fmt"
	"time"

	"github.com/slessio/sless/domain"
)

// BuildError is WaitServing's error for a version whose build failed: the
// build's message and its log.
type BuildError struct {
	Function string
	Version  int
	Message  string
	Log      string
}

func (e *BuildError) Error() string {
	return fmt.Sprintf("the build of version %d of %s failed: %s", e.Version, e.Function, e.Message)
}

// WaitServing polls, every interval, until version v of function name is
// built, active and rolled out (phase Ready, serving_version v: an http
// trigger's URL serves it), and returns the function. progress, when not
// nil, sees every answer (for a spinner or a log line). A failed build is a
// *BuildError; a version built but failing to run, an error with the
// function's message; ctx bounds the wait.
func (c *Client) WaitServing(ctx context.Context, name string, v int, interval time.Duration, progress func(*Function, *Version)) (*Function, error) {
	for {
		ver, err := c.GetVersion(ctx, name, v)
		if err != nil {
			return nil, err
		}
		fn, err := c.GetFunction(ctx, name)
		if err != nil {
			return nil, err
		}
		if progress != nil {
			progress(fn, ver)
		}
		switch {
		case ver.BuildStatus == domain.BuildStatusFailed:
			log := ""
			if ver.BuildLog != nil {
				log = *ver.BuildLog
			}
			return fn, &BuildError{Function: name, Version: v, Message: ver.Message, Log: log}
		case fn.ActiveVersion == v && fn.Phase == domain.PhaseReady && fn.ServingVersion == v:
			return fn, nil
		case fn.ActiveVersion == v && fn.Phase == domain.PhaseFailed:
			return fn, fmt.Errorf("version %d of %s was built but does not run: %s", v, name, fn.Message)
		case fn.ActiveVersion > v:
			return fn, fmt.Errorf("version %d of %s was replaced by version %d while waiting", v, name, fn.ActiveVersion)
		}
		select {
		case <-ctx.Done():
			return fn, fmt.Errorf("version %d of %s is not serving yet (%s, build %s): %w", v, name, fn.Phase, ver.BuildStatus, context.Cause(ctx))
		case <-time.After(interval):
		}
	}
}
