package pgtest

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"strings"
	"time"
)

// watchdogLead is how long before the binary's -test.timeout the watchdog
// reports and exits.
const watchdogLead = time.Minute

// startWatchdog makes a test binary that is about to hit its -test.timeout
// say, in a few lines at the end of its output, which tests wait where, and
// exit: the timeout's own report is every goroutine's stack, whose end (all
// a CI log's tail shows) rarely names the test that hangs.
func startWatchdog() {
	if !flag.Parsed() {
		flag.Parse()
	}
	f := flag.Lookup("test.timeout")
	if f == nil {
		return
	}
	timeout, err := time.ParseDuration(f.Value.String())
	if err != nil || timeout <= 2*watchdogLead {
		return
	}
	time.AfterFunc(timeout-watchdogLead, func() {
		buf := make([]byte, 32<<20)
		buf = buf[:runtime.Stack(buf, true)]
		fmt.Fprintf(os.Stderr, "\npgtest watchdog: the tests have run for %s, %s short of -test.timeout; where the tests wait:\n%s",
			timeout-watchdogLead, watchdogLead, testFrames(string(buf)))
		os.Exit(1)
	})
}

// testFrames returns, for each goroutine whose stack passes through a
// _test.go file (but the main one, which waits for the tests), its header and the frames from its top down to the
// outermost test frame, without the runtime's and testing's own.
func testFrames(stacks string) string {
	var b strings.Builder
	for _, g := range strings.Split(stacks, "\n\n") {
		if strings.Contains(g, "testing.(*M).Run(") {
			continue // the main goroutine, waiting for the tests
		}
		lines := strings.Split(strings.TrimSpace(g), "\n")
		last := -1
		for i, l := range lines {
			if strings.Contains(l, "_test.go:") {
				last = i
			}
		}
		if last < 0 {
			continue
		}
		b.WriteString(lines[0] + "\n")
		for _, l := range lines[1 : last+1] {
			b.WriteString("  " + strings.TrimSpace(l) + "\n")
		}
	}
	return b.String()
}
