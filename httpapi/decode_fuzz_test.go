package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/httpapi/wire"
)

// The bodies FuzzDecodeBody decodes, by its first argument (modulo 4).
const (
	fuzzCreateFunction = iota
	fuzzUpdateFunction
	fuzzCreateTrigger
	fuzzCreateJob
)

// FuzzDecodeBody decodes a body as the handlers of POST .../functions, PUT
// .../functions/{name}, POST .../triggers and POST .../jobs do
// (decodeJSON), then asks the domain as their commands do. It must never
// panic; a refusal is the client's (EINVALID or ETOOLARGE, a field name of
// bounded length); and whatever is accepted is storable: every string of
// the events valid UTF-8 without a NUL (jsonb cannot hold one), within its
// cap. The seeds in testdata/fuzz/FuzzDecodeBody run with go test.
func FuzzDecodeBody(f *testing.F) {
	e := echo.New()
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, kind uint8, body []byte) {
		c := e.NewContext(httptest.NewRequest("POST", "/", bytes.NewReader(body)), httptest.NewRecorder())
		var evs []domain.Event
		var err error
		switch kind % 4 {
		case fuzzCreateFunction:
			var req wire.CreateFunctionRequest
			if err = decodeJSON(c, &req); err == nil {
				evs, err = domain.NewFunction("sless-0123456789abcdef", req.Name).Create(domain.FunctionSpec{Runtime: req.Runtime,
					Entrypoint: req.Entrypoint, MemoryMB: req.MemoryMB, TimeoutSec: req.TimeoutSec, EnvVars: req.EnvVars,
					MaxConcurrency: req.MaxConcurrency, RetrySafe: req.RetrySafe}, now)
			}
		case fuzzUpdateFunction:
			var req wire.UpdateFunctionRequest
			if err = decodeJSON(c, &req); err == nil {
				evs, err = fuzzUpdate(req, now)
			}
		case fuzzCreateTrigger:
			var req wire.CreateTriggerRequest
			if err = decodeJSON(c, &req); err == nil {
				spec := domain.TriggerSpec{Type: string(req.Type), Function: req.Function, Schedule: req.Schedule, Enabled: req.Enabled == nil || *req.Enabled}
				evs, err = domain.NewTrigger("sless-0123456789abcdef", req.Name).Create(spec, now)
			}
		case fuzzCreateJob:
			var req wire.CreateJobRequest
			if err = decodeJSON(c, &req); err == nil {
				evs, err = domain.NewJob("sless-0123456789abcdef", req.Name).Create(domain.JobSpec{Function: req.Function, Event: req.Event, RunID: req.RunID}, now)
			}
		}
		if err != nil {
			var de *domain.Error
			if !errors.As(err, &de) || (de.Code != domain.EINVALID && de.Code != domain.ETOOLARGE) {
				t.Fatalf("refused with %v: not a client's error", err)
			}
			if len(de.Field) > maxFieldName+len("…[truncated]") {
				t.Fatalf("the error names a field of %d bytes", len(de.Field))
			}
			return
		}
		for _, ev := range evs {
			checkStorable(t, ev)
		}
	})
}

// fuzzUpdate is updateFunction and command.UpdateFunction on a function
// with the default configuration of python3.11, named "fn" in the path.
func fuzzUpdate(req wire.UpdateFunctionRequest, now time.Time) ([]domain.Event, error) {
	if req.Name != nil && *req.Name != "fn" {
		return nil, domain.FieldErrorf("name", "differs from the function in the path")
	}
	fn := domain.NewFunction("sless-0123456789abcdef", "fn")
	created, err := fn.Create(domain.FunctionSpec{Runtime: "python3.11"}, now)
	if err != nil {
		return nil, err
	}
	for _, ev := range created {
		fn.Apply(ev)
	}
	cur := fn.Config
	spec := domain.FunctionSpec{Runtime: string(cur.Runtime), Entrypoint: cur.Entrypoint, MemoryMB: cur.MemoryMB,
		TimeoutSec: cur.TimeoutSec, EnvVars: cur.EnvVars, MaxConcurrency: cur.MaxConcurrency, RetrySafe: cur.RetrySafe}
	if req.Runtime != nil && *req.Runtime != spec.Runtime {
		spec.Runtime, spec.Entrypoint = *req.Runtime, ""
	}
	setIf(&spec.Entrypoint, req.Entrypoint)
	setIf(&spec.MemoryMB, req.MemoryMB)
	setIf(&spec.TimeoutSec, req.TimeoutSec)
	setIf(&spec.EnvVars, req.EnvVars)
	setIf(&spec.MaxConcurrency, req.MaxConcurrency)
	setIf(&spec.RetrySafe, req.RetrySafe)
	return fn.UpdateConfig(spec, now)
}

// setIf replaces *dst by *v when v is given.
func setIf[T any](dst *T, v *T) {
	if v != nil {
		*dst = *v
	}
}

// checkStorable fails unless every string of ev, as the store encodes it,
// is valid UTF-8 without a NUL, and the capped ones are within their caps.
func checkStorable(t *testing.T, ev domain.Event) {
	t.Helper()
	data, err := json.Marshal(ev)
	if err != nil {
		t.Fatalf("%T does not encode: %v", ev, err)
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("%T encodes as %s: %v", ev, data, err)
	}
	if s, ok := nulString(v); ok {
		t.Fatalf("%T holds %q, with a NUL", ev, s)
	}
	switch e := ev.(type) {
	case domain.FunctionCreated:
		checkConfig(t, e.Config)
	case domain.FunctionConfigUpdated:
		checkConfig(t, e.Config)
	case domain.TriggerCreated:
		if !domain.IsName(e.Name) || !domain.IsName(e.Function) {
			t.Fatalf("trigger %q of function %q", e.Name, e.Function)
		}
		if e.Schedule != strings.TrimSpace(e.Schedule) || domain.ValidateText("schedule", e.Schedule, domain.MaxScheduleLength) != nil {
			t.Fatalf("schedule %q stored", e.Schedule)
		}
	case domain.JobCreated:
		if !domain.IsName(e.Name) || !domain.IsName(e.Function) {
			t.Fatalf("job %q of function %q", e.Name, e.Function)
		}
		if len(e.Event) > domain.MaxJobEventBytes || !utf8.Valid(e.Event) || !json.Valid(e.Event) {
			t.Fatalf("event %q stored", e.Event)
		}
	}
}

func checkConfig(t *testing.T, cfg domain.FunctionConfig) {
	t.Helper()
	total := 0
	for k, v := range cfg.EnvVars {
		total += len(k) + len(v)
		if !utf8.ValidString(k) || !utf8.ValidString(v) {
			t.Fatalf("env var %q=%q is not UTF-8", k, v)
		}
	}
	if total > domain.MaxEnvBytes || len(cfg.EnvVars) > domain.MaxEnvVars {
		t.Fatalf("%d env vars of %d bytes", len(cfg.EnvVars), total)
	}
	if !utf8.ValidString(cfg.Entrypoint) || strings.ContainsRune(cfg.Entrypoint, 0) {
		t.Fatalf("entrypoint %q", cfg.Entrypoint)
	}
}

// nulString returns a string of the decoded JSON value v (a key or a
// value, at any depth) that holds a NUL or is not UTF-8.
func nulString(v any) (string, bool) {
	bad := func(s string) bool { return strings.ContainsRune(s, 0) || !utf8.ValidString(s) }
	switch v := v.(type) {
	case string:
		return v, bad(v)
	case []any:
		for _, x := range v {
			if s, ok := nulString(x); ok {
				return s, true
			}
		}
	case map[string]any:
		for k, x := range v {
			if bad(k) {
				return k, true
			}
			if s, ok := nulString(x); ok {
				return s, true
			}
		}
	}
	return "", false
}
