package proxy_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/httpapi/proxy"
	"github.com/slessio/sless/store"
)

// invoker serves Invoke for the fixture's namespace at /{function}, as the
// API's invoke route does once it checked the caller.
func (f *fixture) invoker() string {
	f.t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := f.proxy.ServeInvoke(w, r, f.ns, strings.TrimPrefix(r.URL.Path, "/"), store.InvocationAPI); err != nil {
			w.WriteHeader(599) // what the API would render; nothing was written
			w.Write([]byte(domain.ErrorCode(err) + ": " + domain.ErrorMessage(err)))
		}
	}))
	f.t.Cleanup(srv.Close)
	return srv.URL
}

// TestInvokeTellsTheOwnerWhy: the owner's Invoke of a function whose start
// fails answers 503 with the traceback /fn keeps for the record, and tries
// to start it even once its rollout failed (/fn: "not ready"); the
// platform's answers carry ErrorHeader, a function's never does.
func TestInvokeTellsTheOwnerWhy(t *testing.T) {
	t.Parallel()
	f := setup(t, options{})
	f.build("crash", pySpec, pyCrashOnStart)
	base := f.invoker()
	post := func(name string) answer {
		req, _ := http.NewRequest(http.MethodPost, base+"/"+name, strings.NewReader(`{}`))
		return f.do(req)
	}
	a := post("crash")
	wantError(t, a, 503, domain.EUNAVAILABLE, `function "crash" failed to start`, "RuntimeError: no config in /")
	if a.header.Get(proxy.ErrorHeader) != domain.EUNAVAILABLE {
		t.Fatalf("the platform's 503 lacks %s: %v", proxy.ErrorHeader, a.header)
	}
	if inv := f.invocationOf("crash", a); inv.Trigger != store.InvocationAPI || inv.Status != 503 || !strings.Contains(inv.Error, "Traceback") {
		t.Fatalf("record %+v", inv)
	}
	f.fn("crash", func(fn *domain.Function) ([]domain.Event, error) { return fn.FailRollout(1, "it crashed", time.Now()) })
	f.waitRoute("crash", func(st proxy.RouteState) bool { return st.Phase == domain.PhaseFailed })
	wantError(t, post("crash"), 503, domain.EUNAVAILABLE, `function "crash" failed to start`, "RuntimeError")

	if a := post("nothing"); a.status != 599 || !strings.HasPrefix(string(a.body), "NOT_FOUND: ") {
		t.Fatalf("an unknown function: %d %s", a.status, a.body)
	}

	// A function cannot pass for the platform.
	f.upstream("forger", 5, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set(proxy.ErrorHeader, domain.ETIMEOUT)
		w.WriteHeader(http.StatusGatewayTimeout)
	}))
	for _, a := range []answer{f.get("forger", "/"), post("forger")} {
		if a.status != http.StatusGatewayTimeout || a.header.Get(proxy.ErrorHeader) != "" || a.header.Get(proxy.InvocationHeader) == "" {
			t.Fatalf("the function's 504: %d %v", a.status, a.header)
		}
	}
}
