package httpapi_test

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/slessio/sless/httpapi"
)

// BenchmarkGetFunction measures the read path: token check, rate limit,
// namespace check and one read-model query, through HTTP.
func BenchmarkGetFunction(b *testing.B) {
	f := setup(b, unlimited)
	c := f.tenant()
	c.createFunction("bench")
	b.ResetTimer()
	for b.Loop() {
		c.do("GET", c.p("/functions/bench"), nil).want(200)
	}
}

// BenchmarkCreateFunction measures the write path: store.Execute loading
// two streams, appending, projecting, through HTTP.
func BenchmarkCreateFunction(b *testing.B) {
	f := setup(b, unlimited)
	c := f.tenant()
	i := 0
	for b.Loop() {
		i++
		c.do("POST", c.p("/functions"), map[string]any{"name": fmt.Sprintf("fn-%d", i), "runtime": "go1.23"}).want(201)
	}
}

// BenchmarkUploadSmallZip measures an upload of new code: multipart read,
// zip validation, two S3 puts (embedded server), the version and its build job.
func BenchmarkUploadSmallZip(b *testing.B) {
	f := setup(b, unlimited)
	c := f.tenant()
	c.createFunction("up")
	zips := make([][]byte, 0, 1024)
	i := 0
	for b.Loop() {
		if i == len(zips) {
			b.StopTimer()
			zips = append(zips, handlerZip(b, fmt.Sprintf("%d", i)))
			b.StartTimer()
		}
		c.upload("up", zips[i]).want(202)
		i++
	}
}

// unlimited turns the rate limit off: benchmarks measure the work, not the bucket.
func unlimited(c *httpapi.Config) { c.RateLimit = -1 }

func TestConcurrentCreatesOneWins(t *testing.T) {
	t.Parallel()
	f := setup(t)
	c := f.tenant()
	const n = 8
	statuses := make(chan int, n)
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			req, _ := http.NewRequest("POST", f.url+c.p("/functions"), strings.NewReader(`{"name":"race","runtime":"python3.11"}`))
			req.Header.Set("Authorization", "Bearer "+c.token)
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				statuses <- 0
				return
			}
			res.Body.Close()
			statuses <- res.StatusCode
		})
	}
	wg.Wait()
	close(statuses)
	count := map[int]int{}
	for s := range statuses {
		count[s]++
	}
	if count[201] != 1 || count[409] != n-1 {
		t.Fatalf("statuses %v, want one 201 and %d 409", count, n-1)
	}
	var log struct{ Events []any }
	c.do("GET", c.p("/events?stream=function/race"), nil).want(200).decode(&log)
	if len(log.Events) != 1 {
		t.Fatalf("%d events on the stream, want 1", len(log.Events))
	}
}
