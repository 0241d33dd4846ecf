package domain

import (
	"strings"
	"testing"
	"time"
)

func TestAsyncConfig(t *testing.T) {
	base := FunctionSpec{Runtime: "python3.11"}
	c, err := base.Config()
	if err != nil || c.Async != nil || c.AsyncPolicy() != DefaultAsyncConfig() {
		t.Fatalf("no async config: %+v %v; want the defaults", c.Async, err)
	}
	for _, tc := range []struct {
		async AsyncConfig
		want  AsyncConfig
		field string
	}{
		{AsyncConfig{MaxRetries: 0}, AsyncConfig{MaxRetries: 0, MaxEventAgeSec: DefaultAsyncMaxEventAgeSec}, ""},
		{AsyncConfig{MaxRetries: 10, MaxEventAgeSec: 60, MaxConcurrency: 3}, AsyncConfig{MaxRetries: 10, MaxEventAgeSec: 60, MaxConcurrency: 3}, ""},
		{AsyncConfig{MaxRetries: 11}, AsyncConfig{}, "async.max_retries"},
		{AsyncConfig{MaxRetries: -1}, AsyncConfig{}, "async.max_retries"},
		{AsyncConfig{MaxEventAgeSec: 59}, AsyncConfig{}, "async.max_event_age_sec"},
		{AsyncConfig{MaxEventAgeSec: MaxAsyncMaxEventAgeSec + 1}, AsyncConfig{}, "async.max_event_age_sec"},
		{AsyncConfig{MaxEventAgeSec: 60, MaxConcurrency: -1}, AsyncConfig{}, "async.max_concurrency"},
	} {
		spec := base
		spec.Async = &tc.async
		c, err := spec.Config()
		if tc.field != "" {
			if ErrorCode(err) != EINVALID || !strings.HasPrefix(ErrorMessage(err), tc.field+":") {
				t.Errorf("%+v: %v, want EINVALID on %s", tc.async, err, tc.field)
			}
			continue
		}
		if err != nil || c.AsyncPolicy() != tc.want {
			t.Errorf("%+v: %+v %v, want %+v", tc.async, c.AsyncPolicy(), err, tc.want)
		}
	}
	// Equal compares the policies: the defaults spelled out equal none.
	d := DefaultAsyncConfig()
	if !(FunctionConfig{Async: &d}).Equal(FunctionConfig{}) {
		t.Error("the default async config differs from none")
	}
}

func TestValidateIdempotencyKey(t *testing.T) {
	for key, ok := range map[string]bool{"a": true, strings.Repeat("k", 255): true, "order-42/retry 1": true,
		"": false, strings.Repeat("k", 256): false, "a\nb": false, "tab\t": false, "del\x7f": false} {
		if err := ValidateIdempotencyKey(key); (err == nil) != ok {
			t.Errorf("%q: %v, want ok %v", key, err, ok)
		}
	}
}

func TestCallbackAllow(t *testing.T) {
	if _, err := ParseCallbackAllow("ftp://x"); ErrorCode(err) != EINVALID {
		t.Errorf("ftp origin: %v", err)
	}
	if _, err := ParseCallbackAllow("https://x.example/path"); ErrorCode(err) != EINVALID {
		t.Errorf("an origin with a path: %v", err)
	}
	allow, err := ParseCallbackAllow(" https://hooks.example.com , http://127.0.0.1:9000, https://*.example.org:8443")
	if err != nil {
		t.Fatal(err)
	}
	for url, ok := range map[string]bool{
		"https://hooks.example.com/done?x=1":  true,
		"https://HOOKS.example.com:443/":      true,
		"http://hooks.example.com/":           false, // another scheme
		"https://hooks.example.com:8443/":     false, // another port
		"http://127.0.0.1:9000/cb":            true,
		"http://127.0.0.1:9001/cb":            false,
		"https://a.b.example.org:8443/x":      true,
		"https://example.org:8443/x":          false, // the wildcard is for subdomains
		"https://evil.com/.example.org:8443":  false,
		"https://user:pw@hooks.example.com/":  false,
		"/relative":                           false,
		"https://hooks.example.com.evil.com/": false,
	} {
		if err := allow.Check(url); (err == nil) != ok {
			t.Errorf("%s: %v, want ok %v", url, err, ok)
		}
	}
	var off CallbackAllow
	if err := off.Check("https://hooks.example.com/"); err == nil || !strings.Contains(ErrorMessage(err), "off") {
		t.Errorf("empty allow-list: %v, want callbacks off", err)
	}
}

// An async-only change makes no version, and a rollback keeps the async
// configuration (it is the function's, not a version's).
func TestAsyncConfigIsTheFunctions(t *testing.T) {
	now := time.Now()
	f, apply := twoVersions(t, now)
	a := AsyncConfig{MaxRetries: 5, MaxEventAgeSec: 600}
	evs, err := f.UpdateConfig(FunctionSpec{Runtime: "python3.11", MemoryMB: 256, Async: &a}, now)
	if err != nil || len(evs) != 1 {
		t.Fatalf("an async-only change: %v %v; want one FunctionConfigUpdated and no version", evs, err)
	}
	apply(evs, nil)
	apply(f.Rollback(1, now))
	if f.Config.MemoryMB != DefaultMemoryMB || f.Config.AsyncPolicy() != a {
		t.Fatalf("after the rollback: memory %d, async %+v; want version 1's memory and the function's async %+v", f.Config.MemoryMB, f.Config.AsyncPolicy(), a)
	}
}

// twoVersions is a function with two built versions, the second (memory
// 256 MiB) active, and its applier.
func twoVersions(t *testing.T, now time.Time) (*Function, func([]Event, error)) {
	f := NewFunction("sless-0123456789abcdef", "f")
	apply := applier(t, f)
	apply(f.Create(FunctionSpec{Runtime: "python3.11"}, now))
	apply(mustUpload(f, "d1", now))
	apply(f.SucceedBuild(1, "img:1", "", now))
	apply(f.UpdateConfig(FunctionSpec{Runtime: "python3.11", MemoryMB: 256}, now))
	apply(f.SucceedBuild(2, "img:2", "", now))
	return f, apply
}

// applier returns a function applying a command's events to f, failing t
// on the command's error.
func applier(t *testing.T, f *Function) func([]Event, error) {
	return func(evs []Event, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range evs {
			f.Apply(e)
		}
	}
}

func mustUpload(f *Function, digest string, now time.Time) ([]Event, error) {
	evs, _, err := f.Upload(Code{Digest: digest, ZipKey: "z/" + digest, ContextKey: "c/" + digest}, now)
	return evs, err
}
