package drivertest

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// hammer sends requests from several goroutines, back to back, to whatever
// endpoint it currently targets, as the proxy would after learning a new one.
type hammer struct {
	target atomic.Pointer[string]
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu       sync.Mutex
	ok       int
	failures []string
	versions map[string]int // answers per version
}

func startHammer(h Harness, endpoint string, workers int) *hammer {
	ctx, cancel := context.WithCancel(context.Background())
	hm := &hammer{cancel: cancel, versions: map[string]int{}}
	hm.target.Store(&endpoint)
	for range workers {
		hm.wg.Add(1)
		go func() {
			defer hm.wg.Done()
			for ctx.Err() == nil {
				var a answer
				err := h.request(ctx, client, *hm.target.Load(), "/", &a)
				if ctx.Err() != nil {
					return // stopped mid-request: not the function's failure
				}
				hm.mu.Lock()
				if err != nil {
					hm.failures = append(hm.failures, fmt.Sprintf("%s: %v", time.Now().Format("15:04:05.000"), err))
				} else {
					hm.ok++
					hm.versions[a.Version]++
				}
				hm.mu.Unlock()
			}
		}()
	}
	return hm
}

// retarget sends the following requests to endpoint.
func (hm *hammer) retarget(endpoint string) { hm.target.Store(&endpoint) }

// answers returns how often version answered so far.
func (hm *hammer) answers(version string) int {
	hm.mu.Lock()
	defer hm.mu.Unlock()
	return hm.versions[version]
}

// waitAnswers waits until version answered n more times, or timeout.
func (hm *hammer) waitAnswers(version string, n int, timeout time.Duration) bool {
	want := hm.answers(version) + n
	deadline := time.Now().Add(timeout)
	for hm.answers(version) < want {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
	return true
}

// stop ends the hammer and returns its counts.
func (hm *hammer) stop() (ok int, failures []string, versions map[string]int) {
	hm.cancel()
	hm.wg.Wait()
	hm.mu.Lock()
	defer hm.mu.Unlock()
	return hm.ok, hm.failures, hm.versions
}
