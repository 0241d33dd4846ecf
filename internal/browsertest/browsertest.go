// Package browsertest runs the console's tests in a real headless Chromium,
// driven by chromedp. New starts a browser for one test and returns the
// context of its tab; the browser records the page's dialogs and console
// errors (Dialogs, ConsoleErrors) so XSS tests can assert that no injected
// script ran, and it saves a screenshot of the page when the test fails.
//
// The browser is Debian's chromium, which `go tool task browser` installs. A
// test never skips when it is missing: it fails and says how to install it.
// Only tests import this package.
package browsertest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/slessio/sless/internal/testutil"
)

// Timeout is the deadline New gives the context it returns: enough for a
// test's whole conversation with the page on a slow CI machine.
const Timeout = 3 * time.Minute

// startTimeout bounds the launch of the browser, which otherwise has no limit.
const startTimeout = time.Minute

// New starts a headless Chromium for tb and returns the context of its one
// tab, with a deadline of Timeout; derive shorter ones per action. The
// browser stops when tb's cleanup runs. When tb has failed by then, New's
// cleanup first saves a full-page screenshot in a directory that outlives the
// test and logs its path with the page's dialogs and console errors. New
// fails tb when no browser is found or it does not start.
func New(tb testing.TB) context.Context {
	tb.Helper()
	bin := findBrowser(tb)

	rec := &recorder{}
	out := &testutil.SyncBuffer{} // for the message when the browser does not start
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(bin),
		// The test machines have a closed network: without these flags
		// Chromium waits on the services it calls at start and the tests stall.
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true), // CI runs as root, where the sandbox refuses to start
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(filepath.Join(tb.TempDir(), "profile")),
		chromedp.WindowSize(1280, 900),
		chromedp.CombinedOutput(out),
	)
	var tabCtx context.Context
	tabCtx, cancelTab := chromedp.NewContext(allocCtx, chromedp.WithListener(func(ev any) {
		// This runs in the tab's read loop, which must not wait for a command:
		// the dialog is dismissed from another goroutine.
		if rec.record(ev) {
			go func() {
				// The error only says the tab is gone, and then nothing waits on the dialog.
				_ = dismissDialog(tabCtx)
			}()
		}
	}))
	tb.Cleanup(func() {
		cancelTab()
		cancelAlloc()
	})

	// The first action starts the browser and binds its life to the context
	// it runs with, so it gets tabCtx, which has no deadline; the wait for it
	// has one.
	started := make(chan error, 1)
	go func() { started <- chromedp.Do(tabCtx) }()
	var err error
	select {
	case err = <-started:
	case <-time.After(startTimeout):
		err = fmt.Errorf("no answer after %s", startTimeout)
	}
	if err != nil {
		tb.Fatalf("start %s: %v\nits output:\n%s", bin, err, out)
	}

	tb.Cleanup(func() {
		if tb.Failed() {
			saveFailure(tb, tabCtx, rec)
		}
	})
	ctx, cancel := context.WithTimeout(context.WithValue(tabCtx, recorderKey{}, rec), Timeout)
	tb.Cleanup(cancel)
	return ctx
}

// findBrowser returns the path of the browser: $SLESS_CHROMIUM when set, else
// the first of chromium, chromium-browser and google-chrome on PATH, else
// Debian's /usr/bin/chromium. It fails tb when there is none.
func findBrowser(tb testing.TB) string {
	tb.Helper()
	const install = "run `go tool task browser` to install Debian's chromium, or set SLESS_CHROMIUM to a Chromium or Chrome binary"
	if bin := os.Getenv("SLESS_CHROMIUM"); bin != "" {
		path, err := exec.LookPath(bin)
		if err != nil {
			tb.Fatalf("SLESS_CHROMIUM=%s: %v; %s", bin, err, install)
		}
		return path
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "/usr/bin/chromium"} {
		if path, err := exec.LookPath(name); err == nil {
			return path
		}
	}
	tb.Fatalf("no Chromium on PATH nor at /usr/bin/chromium: %s", install)
	return ""
}

// saveFailure keeps what a failed test saw: a screenshot, in a directory of
// its own under os.TempDir because tb.TempDir is removed right after, and the
// page's dialogs and console errors in the log.
func saveFailure(tb testing.TB, tabCtx context.Context, rec *recorder) {
	if d := rec.dialogList(); len(d) > 0 {
		tb.Logf("browser dialogs: %q", d)
	}
	if e := rec.errorList(); len(e) > 0 {
		tb.Logf("browser console errors: %q", e)
	}
	dir, err := os.MkdirTemp("", "sless-browser-*")
	if err != nil {
		tb.Logf("no screenshot of the failure: %v", err)
		return
	}
	// tabCtx has no deadline, so this works after the test's context expired.
	ctx, cancel := context.WithTimeout(tabCtx, 20*time.Second)
	defer cancel()
	path := filepath.Join(dir, unsafeChars.ReplaceAllString(tb.Name(), "_")+".png")
	if err := Screenshot(ctx, path); err != nil {
		tb.Logf("no screenshot of the failure: %v", err)
		return
	}
	tb.Logf("screenshot of the page at the failure: %s", path)
}

var unsafeChars = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// Screenshot saves a full-page PNG of the tab of ctx at path, creating its
// directory, for failures and for the README's pictures of the console.
func Screenshot(ctx context.Context, path string) error {
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100)) // quality 100 means PNG
	if err != nil {
		return fmt.Errorf("capture screenshot: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("create screenshot directory: %w", err)
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		return fmt.Errorf("write screenshot: %w", err)
	}
	return nil
}

// WaitText polls the page every 100 ms until the textContent of the first
// element matching the CSS selector contains want, for live updates. When
// ctx ends first, the error says what the text was, or that nothing matched.
func WaitText(ctx context.Context, selector, want string) error {
	sel, err := json.Marshal(selector) // a JSON string is a JavaScript string literal
	if err != nil {
		return fmt.Errorf("encode selector: %w", err)
	}
	expr := fmt.Sprintf(`(() => { const el = document.querySelector(%s); return el === null ? null : el.textContent; })()`, sel)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	last := fmt.Sprintf("no element matches %s", selector)
	for {
		text, err := chromedp.Run(ctx, chromedp.Evaluate[*string](expr))
		switch {
		case err == nil && text == nil:
			last = fmt.Sprintf("no element matches %s", selector)
		case err == nil:
			if strings.Contains(*text, want) {
				return nil
			}
			last = fmt.Sprintf("text of %s is %q", selector, *text)
		case ctx.Err() == nil:
			// A navigation replaces the page under the evaluation; try again.
			last = fmt.Sprintf("read %s: %v", selector, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for %q: %s: %w", want, last, ctx.Err())
		case <-tick.C:
		}
	}
}
