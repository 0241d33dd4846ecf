package workers

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strconv"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/riverqueue/river"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/outbox"
	"github.com/slessio/sless/store"
)

// Callback is what an asynchronous invocation's callback URL is POSTed
// (application/json) once it is finished.
type Callback struct {
	InvocationID string              `json:"invocation_id"`
	Namespace    string              `json:"namespace"`
	Function     string              `json:"function"`
	State        string              `json:"state"`
	Attempts     int                 `json:"attempts"`
	Status       int                 `json:"status"`
	Headers      map[string][]string `json:"headers,omitempty"`
	// Body is the function's answer as text, or base64 when it is not
	// UTF-8 (BodyEncoding "base64").
	Body         string `json:"body"`
	BodyEncoding string `json:"body_encoding,omitempty"`
	Error        string `json:"error,omitempty"`
}

// callbackWorker POSTs the final response of an asynchronous invocation
// to its callback URL, checked again against the allow-list (the operator
// may have changed it) and never to the platform's own ports on this
// machine. A 2xx answer delivers it; anything else is retried by River
// (outbox.CallbackArgs: 4 attempts), and the last failure is recorded on
// the invocation.
type callbackWorker struct {
	river.WorkerDefaults[outbox.CallbackArgs]
	w *Workers
}

// Timeout bounds one POST.
func (c *callbackWorker) Timeout(*river.Job[outbox.CallbackArgs]) time.Duration {
	return 30 * time.Second
}

// Work sends the callback, see callbackWorker.
func (c *callbackWorker) Work(ctx context.Context, job *river.Job[outbox.CallbackArgs]) error {
	w := c.w
	id, err := uuid.Parse(job.Args.ID)
	if err != nil {
		return river.JobCancel(fmt.Errorf("callback: bad invocation id %q", job.Args.ID))
	}
	inv, err := w.store.GetAsyncByID(ctx, id)
	if domain.ErrorCode(err) == domain.ENOTFOUND {
		return nil
	}
	if err != nil {
		return err
	}
	if err := w.cfg.CallbackAllow.Check(inv.Request.CallbackURL); err != nil {
		return w.store.SetAsyncCallbackState(ctx, id, "failed: "+domain.ErrorMessage(err))
	}
	sendErr := w.postCallback(ctx, inv)
	if sendErr == nil {
		return w.store.SetAsyncCallbackState(ctx, id, "delivered")
	}
	if job.Attempt >= job.MaxAttempts {
		return w.store.SetAsyncCallbackState(ctx, id, "failed: "+sendErr.Error())
	}
	return sendErr
}

// postCallback POSTs inv's outcome; nil for a 2xx answer.
func (w *Workers) postCallback(ctx context.Context, inv store.AsyncInvocation) error {
	cb := Callback{InvocationID: inv.ID.String(), Namespace: inv.Namespace, Function: inv.Function, State: string(inv.State),
		Attempts: inv.AttemptCount, Status: inv.Response.Status, Headers: inv.Response.Headers, Error: inv.Error}
	if utf8.Valid(inv.Response.Body) {
		cb.Body = string(inv.Response.Body)
	} else {
		cb.Body, cb.BodyEncoding = base64.StdEncoding.EncodeToString(inv.Response.Body), "base64"
	}
	body, err := json.Marshal(cb)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, inv.Request.CallbackURL, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "sless-callback")
	req.Header.Set("X-Sless-Invocation-Id", cb.InvocationID)
	res, err := w.callbacks.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if res.StatusCode < 200 || res.StatusCode > 299 {
		return fmt.Errorf("callback answered %s", res.Status)
	}
	return nil
}

// newCallbackClient is the HTTP client of callbacks: no redirects (a
// redirect could leave the allow-list), and a dialer that refuses the
// platform's own ports on this machine's addresses.
func newCallbackClient(ownPorts []int) *http.Client {
	d := &net.Dialer{Timeout: 10 * time.Second, Control: func(_, address string, _ syscall.RawConn) error {
		host, port, err := net.SplitHostPort(address)
		if err != nil {
			return err
		}
		p, _ := strconv.Atoi(port)
		if slices.Contains(ownPorts, p) && isLocalAddr(net.ParseIP(host)) {
			return fmt.Errorf("callback to the platform's own address %s refused", address)
		}
		return nil
	}}
	return &http.Client{Timeout: 20 * time.Second,
		Transport:     &http.Transport{DialContext: d.DialContext, Proxy: nil, MaxIdleConnsPerHost: 4},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// isLocalAddr says whether ip is loopback, unspecified or one of this
// machine's interface addresses.
func isLocalAddr(ip net.IP) bool {
	if ip == nil {
		return false
	}
	if ip.IsLoopback() || ip.IsUnspecified() {
		return true
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return true // cannot tell: refuse
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.Equal(ip) {
			return true
		}
	}
	return false
}
