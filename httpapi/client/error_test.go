package client_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/slessio/sless/httpapi/client"
)

// testUnauthorized: a token the server cannot verify is a 401, which no Is
// helper mistakes for another error.
func testUnauthorized(t *testing.T, f *fixture) {
	c, err := client.New(f.url, mint(t, []byte("another-secret-0123456789abcdefghij"), "mallory"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.ListFunctions(context.Background())
	wantError(t, err, http.StatusUnauthorized, client.CodeUnauthorized, "")
	if client.IsNotFound(err) || client.IsConflict(err) {
		t.Fatalf("a 401 is classified as another error: %v", err)
	}
}

// TestErrorOfNonAPIAnswers puts a stand-in for a proxy or load balancer
// where the API should be: its HTML errors become *Error values with the
// status and no code, which no Is helper mistakes for the API's.
func TestErrorOfNonAPIAnswers(t *testing.T) {
	t.Parallel()
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		switch {
		case strings.HasSuffix(r.URL.Path, "/gone"):
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprint(w, "<html><body><h1>404 Not Found</h1><hr>nginx</body></html>")
		case strings.HasSuffix(r.URL.Path, "/functions"):
			fmt.Fprint(w, "<html><body>Welcome to nginx!</body></html>") // 200, not the API
		default:
			w.WriteHeader(http.StatusBadGateway)
			fmt.Fprint(w, "<html>\n<body>\n<h1>502 Bad Gateway</h1>\n</body>\n</html>")
		}
	}))
	t.Cleanup(proxy.Close)
	c, err := client.New(proxy.URL, mint(t, testSecret, "alice"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	_, err = c.GetFunction(ctx, "hello")
	var e *client.Error
	if !errors.As(err, &e) || e.Status != http.StatusBadGateway || e.Code != "" {
		t.Fatalf("502 page: %#v", err)
	}
	if msg := err.Error(); !strings.Contains(msg, "502 Bad Gateway (not an API error)") || !strings.Contains(msg, "text/html") {
		t.Fatalf("502 page: %q", msg)
	}

	_, err = c.GetFunction(ctx, "gone")
	if !errors.As(err, &e) || e.Status != http.StatusNotFound || client.IsNotFound(err) {
		t.Fatalf("a proxy's 404 page: %v (IsNotFound %t)", err, client.IsNotFound(err))
	}

	_, err = c.ListFunctions(ctx)
	if err == nil || !strings.Contains(err.Error(), "not JSON") || errors.As(err, &e) {
		t.Fatalf("a 200 HTML page: %v", err)
	}
}
