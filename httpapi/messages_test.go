package httpapi_test

import (
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/slessio/sless/store/codestore/ziptest"
)

// TestErrorMessagesReadForPeople renders the API's errors of every code a
// request can meet here once, and checks that each message is for people:
// a field named once ("memory_mb: ...", never "memory_mb: memory_mb: ..."),
// no Go identifiers, types, format verbs or internal wrappers.
func TestErrorMessagesReadForPeople(t *testing.T) {
	t.Parallel()
	f := setup(t)
	c := f.tenant()
	c.createFunction("taken")
	other := f.tenant()
	zip := ziptest.Files(t, map[string]string{"handler.py": "def handle(event):\n    return 1\n"})
	c.upload("taken", zip).want(http.StatusAccepted)
	for _, r := range []struct {
		name string
		do   func() *response
		code int
	}{
		{"a field out of range", func() *response {
			return c.do("POST", c.p("/functions"), map[string]any{"name": "small", "runtime": "python3.11", "memory_mb": 10})
		}, 400},
		{"a bad name", func() *response {
			return c.do("POST", c.p("/functions"), map[string]any{"name": "Bad_Name", "runtime": "python3.11"})
		}, 400},
		{"a bad schedule", func() *response {
			return c.do("POST", c.p("/triggers"), map[string]any{"name": "tick", "type": "cron", "function": "taken", "schedule": "61 * * * *"})
		}, 400},
		{"an unknown field", func() *response {
			res := c.do("POST", c.p("/functions"), map[string]any{"name": "x", "runtime": "python3.11", "memroy_mb": 10})
			res.wantError(400, "INVALID", "memroy_mb", `is not a known field (did you mean "memory_mb"?)`)
			return res
		}, 400},
		{"not JSON", func() *response { return c.do("POST", c.p("/functions"), "{not json") }, 400},
		{"no token", func() *response { return f.anonymous().do("GET", c.p("/functions"), nil) }, 401},
		{"another namespace", func() *response { return other.do("GET", c.p("/functions"), nil) }, 403},
		{"no such function", func() *response { return c.do("GET", c.p("/functions/nothere"), nil) }, 404},
		{"a method the route lacks", func() *response { return c.do("PATCH", c.p("/functions/taken"), map[string]any{}) }, 405},
		{"a name taken", func() *response {
			return c.do("POST", c.p("/functions"), map[string]any{"name": "taken", "runtime": "python3.11"})
		}, 409},
		{"invoking what does not run here", func() *response { return c.do("POST", c.p("/functions/taken/invoke"), "{}") }, 0},
		{"a rollback to nothing built", func() *response {
			return c.do("POST", c.p("/functions/taken/rollback"), map[string]any{"version": 7})
		}, 0},
		{"a zip that is not one", func() *response { return c.upload("taken", []byte("not a zip")) }, 400},
	} {
		res := r.do()
		if r.code != 0 && res.status != r.code {
			t.Errorf("%s: status %d, want %d; body %s", r.name, res.status, r.code, res.body)
			continue
		}
		if res.status < 400 {
			t.Errorf("%s: status %d, want an error", r.name, res.status)
			continue
		}
		var e apiError
		res.decode(&e)
		t.Logf("%s: %d %s: %s", r.name, res.status, e.Error.Code, e.Error.Message)
		for _, fault := range messageFaults(e.Error.Message) {
			t.Errorf("%s (%s): %q %s", r.name, e.Error.Code, e.Error.Message, fault)
		}
	}
}

// TestMessageFaultsFindsWhatItLooksFor: the guard itself, on the messages
// that new users met.
func TestMessageFaultsFindsWhatItLooksFor(t *testing.T) {
	for _, msg := range []string{
		"schedule: schedule: bad", "memory_mb: memory_mb: 10",
		"field timeot not found in type cli.project",
		"sless client: the token is not a JWT; pass WithNamespace *client.Option",
		"sless error: code=INVALID message=x", "got %!s(<nil>)", "want map[string]string",
	} {
		if len(messageFaults(msg)) == 0 {
			t.Errorf("messageFaults(%q) found nothing", msg)
		}
	}
}

// messageFaults says what in msg is not for people.
func messageFaults(msg string) []string {
	var faults []string
	if msg == "" {
		faults = append(faults, "is empty")
	}
	parts := strings.Split(msg, ": ")
	for i := 1; i < len(parts); i++ {
		if parts[i] == parts[i-1] {
			faults = append(faults, "names "+parts[i]+" twice")
		}
	}
	for _, bad := range goish {
		if m := bad.FindString(msg); m != "" {
			faults = append(faults, "shows "+m)
		}
	}
	return faults
}

// goish are what Go code, not people, writes: package.Identifier, pointer
// and composite types, fmt's verbs gone wrong, error wrappers and the
// domain's own Error text.
var goish = []*regexp.Regexp{
	regexp.MustCompile(`\b[a-z][a-z0-9]*\.[A-Z][A-Za-z0-9]*\b`),
	regexp.MustCompile(`\*[a-z]+\.[A-Za-z]`),
	regexp.MustCompile(`\btype [a-z][a-z0-9]*\.[A-Za-z]`),
	regexp.MustCompile(`\b(map\[|\[\]string|struct \{|interface \{)`),
	regexp.MustCompile(`%!|<nil>`),
	regexp.MustCompile(`sless error: code=|sless client:`),
	regexp.MustCompile(`\b(json|yaml|pgx|echo): `),
}
