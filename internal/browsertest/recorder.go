package browsertest

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// recorder keeps what a tab's pages did that a test cannot see in the DOM:
// the dialogs they opened and the errors they wrote to the console. It sees
// every event of the tab from its start (chromedp.WithListener), in order, so
// what happened before an action returned is recorded when it returns.
// chromedp itself enables the runtime and log domains these events come from.
type recorder struct {
	mu      sync.Mutex
	dialogs []string
	errors  []string
}

type recorderKey struct{}

// record notes ev when it is a dialog or an error, and reports whether it is
// a dialog, which blocks the page until someone dismisses it.
func (r *recorder) record(ev any) (dialog bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch ev := ev.(type) {
	case *page.EventJavascriptDialogOpening:
		r.dialogs = append(r.dialogs, ev.Message)
		return true
	case *runtime.EventExceptionThrown:
		r.errors = append(r.errors, "exception: "+exceptionText(ev.ExceptionDetails))
	case *runtime.EventConsoleAPICalled:
		if ev.Type == runtime.ConsoleAPICalledTypeError || ev.Type == runtime.ConsoleAPICalledTypeAssert {
			r.errors = append(r.errors, "console."+string(ev.Type)+": "+argsText(ev.Args))
		}
	case *log.EventEntryAdded:
		// A Content-Security-Policy violation arrives here, from the source
		// "security". The browser asks for /favicon.ico by itself, whatever
		// the page says, so its 404 is no error of the page.
		e := ev.Entry
		if e.Level == log.EntryLevelError && !(e.Source == log.EntrySourceNetwork && strings.HasSuffix(e.URL, "/favicon.ico")) {
			r.errors = append(r.errors, string(e.Source)+": "+e.Text)
		}
	}
	return false
}

func (r *recorder) dialogList() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.dialogs)
}

func (r *recorder) errorList() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.errors)
}

// dismissDialog closes the open dialog of the tab of ctx as its Cancel button
// would, so a confirm() an attacker injected answers false.
func dismissDialog(ctx context.Context) error {
	_, err := chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: false})
	return err
}

// Dialogs returns the messages of the alert, confirm and prompt dialogs the
// pages of ctx's tab opened since New, in order. New dismisses each at once,
// so a page never hangs on one. It panics when ctx does not come from New.
func Dialogs(ctx context.Context) []string {
	return recorderOf(ctx).dialogList()
}

// ConsoleErrors returns, in order, the errors the pages of ctx's tab reported
// since New: uncaught exceptions ("exception: ..."), console.error and failed
// console.assert calls ("console.error: ..."), and the browser's log entries
// of level error, prefixed with their source: Content-Security-Policy
// violations ("security: Executing inline script violates the following
// Content Security Policy directive ...") and failed requests ("network:
// Failed to load resource ..."), except the browser's own /favicon.ico. It
// panics when ctx does not come from New.
func ConsoleErrors(ctx context.Context) []string {
	return recorderOf(ctx).errorList()
}

// recorderOf panics rather than return nothing: an XSS test asserting no
// dialog must not pass because it was handed the wrong context.
func recorderOf(ctx context.Context) *recorder {
	r, ok := ctx.Value(recorderKey{}).(*recorder)
	if !ok {
		panic("browsertest: the context does not come from browsertest.New")
	}
	return r
}

// exceptionText is the error as the DevTools console shows it, such as
// "Uncaught ReferenceError: x is not defined", without its stack.
func exceptionText(d *runtime.ExceptionDetails) string {
	if d == nil {
		return ""
	}
	text := d.Text
	if d.Exception != nil {
		desc, _, _ := strings.Cut(valueText(d.Exception), "\n    at ")
		text += " " + desc
	}
	return strings.TrimSpace(text)
}

// argsText joins the arguments of a console call, strings as they are.
func argsText(args []*runtime.RemoteObject) string {
	parts := make([]string, len(args))
	for i, a := range args {
		parts[i] = valueText(a)
	}
	return strings.Join(parts, " ")
}

func valueText(o *runtime.RemoteObject) string {
	var s string
	switch {
	case o.Type == runtime.RemoteObjectTypeString && json.Unmarshal(o.Value, &s) == nil:
		return s
	case o.Description != "":
		return o.Description
	case len(o.Value) > 0:
		return string(o.Value)
	case o.UnserializableValue != "":
		return string(o.UnserializableValue)
	}
	return string(o.Type)
}
