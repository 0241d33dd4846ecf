package domain

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

// requireField fails unless err is EINVALID about field.
func requireField(t *testing.T, err error, field string) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) || e.Code != EINVALID || e.Field != field {
		t.Fatalf("error %v, want EINVALID about %q", err, field)
	}
}

// TestScheduleIsTrimmedAndCapped: a schedule is trimmed before it is
// validated and stored, and a longer one than MaxScheduleLength (however it
// parses) or one with a control character inside is refused, naming the
// field and without echoing the whole input.
func TestScheduleIsTrimmedAndCapped(t *testing.T) {
	t.Parallel()
	create := func(schedule string) ([]Event, error) {
		return NewTrigger("ns", "tick").Create(TriggerSpec{Type: "cron", Function: "fn", Schedule: schedule, Enabled: true}, t0)
	}
	evs, err := create("  */5 * * * *" + strings.Repeat(" ", 300_000))
	if err != nil {
		t.Fatal(err)
	}
	if got := evs[0].(TriggerCreated).Schedule; got != "*/5 * * * *" {
		t.Fatalf("stored schedule of %d characters, want it trimmed", len(got))
	}
	long := "* * * * " + strings.Repeat("1,", 70_000) + "1" // 140,009 characters, every one a valid day
	for name, schedule := range map[string]string{
		"long":        long,
		"just over":   "0 0 * * " + strings.Repeat("0,", 124) + "0000",
		"NUL":         "* * * * *\x00",
		"NUL inside":  "*/5\x00 * * * *",
		"tab inside":  "*\t*\t*\t*\t*",
		"newline":     "* * * * *\n0 0 * * *",
		"bad UTF-8":   "* * * * \xff",
		"C1 control":  "* * * *\u0085*",
		"macro + NUL": "@hourly\x00",
	} {
		_, err := create(schedule)
		if ErrorCode(err) != EINVALID {
			t.Fatalf("%s: %v, want EINVALID", name, err)
		}
		requireField(t, err, "schedule")
		if msg := ErrorMessage(err); len(msg) > 400 {
			t.Errorf("%s: the message is %d bytes long: it echoes the input", name, len(msg))
		}
	}
	if len("0 0 * * "+strings.Repeat("0,", 123)+"0") > MaxScheduleLength {
		t.Fatal("the longest schedule accepted below is over the cap")
	}
	if _, err := create("0 0 * * " + strings.Repeat("0,", 123) + "0"); err != nil {
		t.Fatalf("a schedule of %d characters: %v", MaxScheduleLength-8, err)
	}
	if _, err := ParseCron(long); err == nil {
		t.Fatal("ParseCron accepted a schedule over the cap")
	}
}

// TestJobEventMustBeStorable: PostgreSQL's jsonb cannot hold \u0000 (nor
// an unpaired surrogate), nor text that is not UTF-8: such an event is
// refused with field "event" before anything is written.
func TestJobEventMustBeStorable(t *testing.T) {
	t.Parallel()
	create := func(event string) error {
		_, err := NewJob("ns", "once").Create(JobSpec{Function: "fn", Event: json.RawMessage(event)}, t0)
		return err
	}
	for _, event := range []string{
		`{"a": "x\u0000y"}`,
		`{"a\u0000": 1}`,
		`["\u0000"]`,
		`"\u0000"`,
		`{"deep": [{"k": "\u0000"}]}`,
		`{"a": "\ud800"}`,       // a high surrogate alone
		`{"a": "\udc00x"}`,      // a low surrogate alone
		`{"a": "\ud800\u0041"}`, // a high surrogate before no low one
		"{\"a\": \"\xff\"}",     // not UTF-8
		`{"n": 1e131072}`,       // numeric: at most 131072 digits before the point
		`{"n": 0.1e131073}`,
		`[1e-16384]`, // and 16383 after it
		`[1.5e-16383]`,
		`[0.0e-999999]`, // zero too
		`[1e99999999999999999999]`,
	} {
		requireField(t, create(event), "event")
	}
	for _, event := range []string{
		`{"a": "\\u0000"}`, // a backslash, then the text u0000
		`{"a": "\\\\u0000"}`,
		`{"emoji": "\ud83d\ude00", "tab": "a\tb", "nl": "\n", "bell": "\u0007"}`,
		`{"a": "é ü 日本"}`,
		`null`,
		``,
		`[1e131071, 9e131071, 1e-16383, 123456e-16383, 0e9999999, -0.5, 1E+2, 12.5e-3]`,
	} {
		if err := create(event); err != nil {
			t.Errorf("event %s: %v", event, err)
		}
	}
}

// TestEnvValuesRefuseControlCharacters: an env value may span lines (a PEM
// key) but holds no other control character; the error names env_vars.
func TestEnvValuesRefuseControlCharacters(t *testing.T) {
	t.Parallel()
	for _, v := range []string{"a\x00b", "a\x01b", "\x1b[31m", "a\x7fb", "\u0085", "bad \xff UTF-8"} {
		requireField(t, ValidateEnvVars(map[string]string{"KEY": v}), "env_vars")
	}
	pem := "-----BEGIN PRIVATE KEY-----\r\nMIIE\tvQ==\n-----END PRIVATE KEY-----\n"
	if err := ValidateEnvVars(map[string]string{"KEY": pem, "EMPTY": "", "UNICODE": "日本 é"}); err != nil {
		t.Fatal(err)
	}
}

// TestValidateText: the one check of free text.
func TestValidateText(t *testing.T) {
	t.Parallel()
	for s, ok := range map[string]bool{
		"": true, "hello you": true, "é": true, strings.Repeat("a", 10): true, strings.Repeat("a", 11): false,
		"a\x00": false, "a\tb": false, "a\nb": false, "\x7f": false, "\u0085": false, "\xff": false,
	} {
		err := ValidateText("f", s, 10)
		if (err == nil) != ok {
			t.Errorf("ValidateText(%q) = %v, want ok %v", s, err, ok)
		}
		if err != nil {
			requireField(t, err, "f")
		}
	}
}

// TestJobOutcomeIsStorable: a function's output may hold anything, NUL and
// broken UTF-8 included; what a job records of it is storable text, so the
// run is never stuck because its result could not be written.
func TestJobOutcomeIsStorable(t *testing.T) {
	t.Parallel()
	j := NewJob("ns", "once")
	j = fold(j, mustEvents(t)(j.Create(JobSpec{Function: "fn", RunID: 1}, t0)))
	j = fold(j, j.Start(1, 1, t0))
	done, failed := *j, *j
	fold(&done, j.Succeed(1, "{\"a\": \"\x00\"}", "out\x00put \xff", t0))
	fold(&failed, j.Fail(1, "Trace\x00back \xff", "err\x00", t0))
	for _, s := range []string{done.Message, done.Output, failed.Message, failed.Output} {
		if strings.ContainsRune(s, 0) || !utf8.ValidString(s) {
			t.Errorf("recorded %q: not storable", s)
		}
	}
	if done.Output != "out\ufffdput \ufffd" {
		t.Errorf("output %q, want the NUL and the bad byte as U+FFFD", done.Output)
	}
}

func mustEvents(t *testing.T) func([]Event, error) []Event {
	return func(evs []Event, err error) []Event {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return evs
	}
}

// TestCronStepPastTheRange: a step larger than its field's range (any
// size, up to the largest integer) names the first value only; before, a
// huge one overflowed and named others.
func TestCronStepPastTheRange(t *testing.T) {
	t.Parallel()
	for _, expr := range []string{"59/9223372036854775807 * * * *", "59/60 * * * *", "59 * * * *"} {
		s, err := ParseCron(expr)
		if err != nil {
			t.Fatal(err)
		}
		if s.minute != 1<<59 {
			t.Errorf("%q: minutes %b, want 59 alone", expr, s.minute)
		}
	}
}

// TestBuildOutcomeIsStorable: a build's output (a compiler printing a
// binary's bytes) may hold a NUL; what the version records is storable,
// so the build's outcome can always be written.
func TestBuildOutcomeIsStorable(t *testing.T) {
	t.Parallel()
	for _, fail := range []bool{false, true} {
		f := newFunction(t, FunctionSpec{Runtime: "python3.11"})
		up, _, err := f.Upload(Code{Digest: "sha256:1", ZipKey: "z", ContextKey: "c"}, t0)
		f = fold(f, mustEvents(t)(up, err))
		var evs []Event
		if fail {
			evs, err = f.FailBuild(1, "error\x00 \xff", "log\x00", t0)
		} else {
			evs, err = f.SucceedBuild(1, "image", "log\x00 \xff", t0)
		}
		v, _ := fold(f, mustEvents(t)(evs, err)).Version(1)
		for _, s := range []string{v.Message, v.BuildLog} {
			if strings.ContainsRune(s, 0) || !utf8.ValidString(s) {
				t.Errorf("failed %v: recorded %q", fail, s)
			}
		}
	}
}

// An entrypoint of any runtime is capped, and neither it nor an unknown
// runtime is repeated whole in the error.
func TestEntrypointAndRuntimeAreCapped(t *testing.T) {
	long := "H" + strings.Repeat("a", MaxEntrypointLength)
	for _, r := range []Runtime{RuntimeGo123, RuntimePython311} {
		e := long
		if r == RuntimePython311 {
			e = "h." + strings.Repeat("a", MaxEntrypointLength)
		}
		err := ValidateEntrypoint(r, e)
		if ErrorCode(err) != EINVALID || strings.Contains(ErrorMessage(err), e) || !strings.Contains(ErrorMessage(err), "at most 255") {
			t.Errorf("%s entrypoint of %d characters: %v", r, len(e), err)
		}
	}
	if err := ValidateEntrypoint(RuntimeGo123, "Handle"); err != nil {
		t.Fatal(err)
	}
	if err := ValidateEntrypoint(RuntimeGo123, "Handle\x00"); ErrorCode(err) != EINVALID {
		t.Errorf("an entrypoint with a NUL: %v", err)
	}
	_, err := ParseRuntime(strings.Repeat("x", 100000))
	if ErrorCode(err) != EINVALID || len(ErrorMessage(err)) > 300 {
		t.Errorf("a 100,000-byte runtime: %d-byte message %.80q", len(ErrorMessage(err)), ErrorMessage(err))
	}
}
