package browsertest_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/slessio/sless/internal/browsertest"
	"github.com/slessio/sless/internal/testutil"
)

// pages serves the pages the tests load; "csp" ones forbid inline scripts as
// the console does.
func pages(t *testing.T) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	page := func(path, body string, csp bool) {
		mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			if csp {
				w.Header().Set("Content-Security-Policy", "script-src 'self'")
			}
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			w.Write([]byte("<!doctype html><title>t</title>" + body))
		})
	}
	page("/alert", `<p>hi</p><script>alert("x")</script>`, false)
	page("/inline", `<p>hi</p><script>alert("inline")</script>`, true)
	page("/errors", `<script>console.error("boom", 42); throw new Error("kaput")</script>`, false)
	page("/live", `<p id="status">waiting</p><script src="/live.js"></script>`, true)
	mux.HandleFunc("/live.js", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/javascript")
		w.Write([]byte(`setTimeout(() => { document.getElementById("status").textContent = "ready" }, 500)`))
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func navigate(t *testing.T, ctx context.Context, url string) {
	t.Helper()
	if err := chromedp.Do(ctx, chromedp.Navigate(url)); err != nil {
		t.Fatalf("navigate to %s: %v", url, err)
	}
}

func TestDialogIsRecordedAndDismissed(t *testing.T) {
	t.Parallel()
	srv := pages(t)
	ctx := browsertest.New(t)

	// Navigate returns only once the page loaded, so the alert did not block it.
	navigate(t, ctx, srv.URL+"/alert")
	if got := browsertest.Dialogs(ctx); !slices.Equal(got, []string{"x"}) {
		t.Fatalf("dialogs = %q, want [x]", got)
	}
	if err := browsertest.WaitText(ctx, "p", "hi"); err != nil {
		t.Fatal(err)
	}
}

func TestCSPViolationIsAConsoleError(t *testing.T) {
	t.Parallel()
	srv := pages(t)
	ctx := browsertest.New(t)

	navigate(t, ctx, srv.URL+"/inline")
	testutil.Eventually(t, 10*time.Second, func() error {
		for _, e := range browsertest.ConsoleErrors(ctx) {
			if strings.Contains(e, "Content Security Policy") {
				return nil
			}
		}
		return errors.New("no console error mentions the Content Security Policy: " + strings.Join(browsertest.ConsoleErrors(ctx), "; "))
	})
	if got := browsertest.Dialogs(ctx); len(got) != 0 {
		t.Fatalf("the inline script ran: dialogs %q", got)
	}
}

func TestExceptionsAndConsoleErrors(t *testing.T) {
	t.Parallel()
	srv := pages(t)
	ctx := browsertest.New(t)

	navigate(t, ctx, srv.URL+"/errors")
	want := []string{"console.error: boom 42", "exception: Uncaught Error: kaput"}
	testutil.Eventually(t, 10*time.Second, func() error {
		if got := browsertest.ConsoleErrors(ctx); !slices.Equal(got, want) {
			return errors.New("console errors " + strings.Join(got, "; "))
		}
		return nil
	})
}

func TestWaitTextSeesALiveUpdate(t *testing.T) {
	t.Parallel()
	srv := pages(t)
	ctx := browsertest.New(t)

	navigate(t, ctx, srv.URL+"/live")
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	err := browsertest.WaitText(short, "#status", "ready")
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), `"waiting"`) {
		t.Fatalf("WaitText before the update = %v, want a timeout that shows the text \"waiting\"", err)
	}
	if err := browsertest.WaitText(ctx, "#status", "ready"); err != nil {
		t.Fatal(err)
	}

	short, cancel = context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	if err := browsertest.WaitText(short, "#nothing", "x"); err == nil || !strings.Contains(err.Error(), "no element matches #nothing") {
		t.Fatalf("WaitText on a missing element = %v", err)
	}
	if errs := browsertest.ConsoleErrors(ctx); len(errs) != 0 {
		t.Fatalf("console errors on a page that follows its policy: %q", errs)
	}
}

func TestScreenshotWritesAPNG(t *testing.T) {
	t.Parallel()
	srv := pages(t)
	ctx := browsertest.New(t)

	navigate(t, ctx, srv.URL+"/live")
	path := filepath.Join(t.TempDir(), "new", "dir", "shot.png")
	if err := browsertest.Screenshot(ctx, path); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")) {
		t.Fatalf("%s starts with %q, not the PNG signature", path, b[:min(len(b), 8)])
	}
}

func TestRecorderNeedsTheContextOfNew(t *testing.T) {
	t.Parallel()
	defer func() {
		if recover() == nil {
			t.Fatal("Dialogs on a plain context did not panic")
		}
	}()
	browsertest.Dialogs(context.Background())
}
