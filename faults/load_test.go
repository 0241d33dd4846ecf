package faults

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// answer is one request of a load: when it was answered, with what status
// (0: no answer), and whether a 503 said when to retry.
type answer struct {
	at         time.Time
	status     int
	retryAfter bool
}

// load is traffic from goroutines, each with a client of its own, counting
// answers by status.
type load struct {
	name string
	wg   sync.WaitGroup
	stop context.CancelFunc
	n    atomic.Int64

	mu      sync.Mutex
	answers []answer
	samples map[int]string // one body per status, for the report
}

// request is one request of a load: it returns the answer's status (0 and
// the error without one), whether it carried Retry-After, and its body.
type request func(ctx context.Context, c *http.Client, i int64) (status int, retryAfter bool, body string, err error)

// startLoad runs clients goroutines sending req until stopped.
func startLoad(name string, clients int, req request) *load {
	ctx, cancel := context.WithCancel(context.Background())
	l := &load{name: name, stop: cancel, samples: map[int]string{}}
	for range clients {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			c := &http.Client{Timeout: 10 * time.Second}
			for ctx.Err() == nil {
				status, ra, body, err := req(ctx, c, l.n.Add(1))
				if ctx.Err() != nil && err != nil {
					return // stopped mid-request: no answer to count
				}
				l.mu.Lock()
				l.answers = append(l.answers, answer{at: time.Now(), status: status, retryAfter: ra})
				if _, ok := l.samples[status]; !ok {
					if err != nil {
						body = err.Error()
					}
					l.samples[status] = body
				}
				l.mu.Unlock()
				if status == 0 || status >= 500 {
					time.Sleep(20 * time.Millisecond) // as a client backs off; keeps the count meaningful
				}
			}
		}()
	}
	return l
}

// halt stops the load and waits for its requests.
func (l *load) halt() {
	l.stop()
	l.wg.Wait()
}

// snapshot is a copy of the answers so far.
func (l *load) snapshot() []answer {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]answer(nil), l.answers...)
}

// count is how many answers had a status for which ok is true.
func (l *load) count(ok func(status int) bool) int {
	n := 0
	for _, a := range l.snapshot() {
		if ok(a.status) {
			n++
		}
	}
	return n
}

func is2xx(s int) bool                 { return s >= 200 && s < 300 }
func notOK(s int) bool                 { return !is2xx(s) }
func anyStatus(int) bool               { return true }
func isStatus(want int) func(int) bool { return func(s int) bool { return s == want } }

// byStatus renders the counts by status, e.g. "4,210×200 12×503 3×no answer".
func (l *load) byStatus() string {
	counts := map[int]int{}
	for _, a := range l.snapshot() {
		counts[a.status]++
	}
	var keys []int
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	var parts []string
	for _, k := range keys {
		what := fmt.Sprint(k)
		if k == 0 {
			what = "no answer"
		}
		parts = append(parts, fmt.Sprintf("%s×%s", thousands(counts[k]), what))
	}
	if len(parts) == 0 {
		return "no requests"
	}
	return strings.Join(parts, " ")
}

// sample is a body (or transport error) of the first answer with status.
func (l *load) sample(status int) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.samples[status]
}

// window is the span between the first and the last answer with a status
// for which ok is true, between from and to; zero when none.
func (l *load) window(from, to time.Time, ok func(int) bool) (first, last time.Time, n int) {
	for _, a := range l.snapshot() {
		if a.at.Before(from) || a.at.After(to) || !ok(a.status) {
			continue
		}
		if first.IsZero() {
			first = a.at
		}
		last = a.at
		n++
	}
	return first, last, n
}

// recoveredAfter is how long after t (a fault's end) the load answered 2xx
// for good: the first 2xx answered after t and after the last failure.
func (l *load) recoveredAfter(t time.Time) (time.Duration, bool) {
	from := t
	all := l.snapshot()
	for _, a := range all {
		if a.at.After(from) && notOK(a.status) {
			from = a.at
		}
	}
	for _, a := range all {
		if a.at.After(from) && is2xx(a.status) {
			return a.at.Sub(t), true
		}
	}
	return 0, false
}

// acked is the set of names whose creation the API acknowledged (2xx).
type acked struct {
	mu    sync.Mutex
	names []string
}

func (a *acked) add(name string) {
	a.mu.Lock()
	a.names = append(a.names, name)
	a.mu.Unlock()
}

func (a *acked) list() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.names...)
}

// getRequest loads GET url.
func getRequest(url string) request {
	return func(ctx context.Context, c *http.Client, _ int64) (int, bool, string, error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		return do(c, req)
	}
}

// createRequest loads POST .../functions with a new name each time (prefix
// and the request's number), recording the acknowledged ones in a.
func createRequest(tn *tenant, p *plane, prefix string, a *acked) request {
	url := tn.functionsURL(p)
	return func(ctx context.Context, c *http.Client, i int64) (int, bool, string, error) {
		name := fmt.Sprintf("%s-%d", prefix, i)
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url,
			strings.NewReader(fmt.Sprintf(`{"name":%q,"runtime":"python3.11"}`, name)))
		req.Header.Set("Authorization", "Bearer "+tn.token)
		req.Header.Set("Content-Type", "application/json")
		status, ra, body, err := do(c, req)
		if is2xx(status) {
			a.add(name)
		}
		return status, ra, body, err
	}
}

// do sends req and reads the answer.
func do(c *http.Client, req *http.Request) (int, bool, string, error) {
	resp, err := c.Do(req)
	if err != nil {
		return 0, false, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	return resp.StatusCode, resp.Header.Get("Retry-After") != "", string(b), nil
}

// thousands renders n with comma separators: 67410 → "67,410".
func thousands(n int) string {
	s := fmt.Sprint(n)
	if n < 0 {
		return "-" + thousands(-n)
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// secs renders d in seconds with one decimal: "4.2 s".
func secs(d time.Duration) string { return fmt.Sprintf("%.1f s", d.Seconds()) }
