package invoke

import (
	"strings"
	"testing"

	"github.com/slessio/sless/driver"
)

func TestOutcomeOf(t *testing.T) {
	t.Parallel()
	ok := OutcomeOf(driver.RunResult{Stdout: "log\n\"result\"\n\n"}, 30)
	if !ok.OK || ok.Result != `"result"` || ok.Output != "log\n\"result\"\n\n" {
		t.Errorf("success = %+v", ok)
	}
	fail := OutcomeOf(driver.RunResult{ExitCode: 1, Stdout: "partial", Stderr: "Traceback\nValueError: x\n"}, 30)
	if fail.OK || fail.Message != "Traceback\nValueError: x" || fail.Output != "partial\nTraceback\nValueError: x\n" {
		t.Errorf("failure = %+v", fail)
	}
	to := OutcomeOf(driver.RunResult{ExitCode: 124, TimedOut: true, Stderr: "killed"}, 7)
	if to.OK || to.Message != "timed out after 7 s" || !strings.Contains(to.Output, "killed") {
		t.Errorf("timeout = %+v", to)
	}
	if e := OutcomeOf(driver.RunResult{}, 1); !e.OK || e.Result != "" {
		t.Errorf("empty success = %+v", e)
	}
}
