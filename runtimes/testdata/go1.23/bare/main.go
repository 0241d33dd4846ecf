// Command bare is the net/http baseline for BenchmarkWrapper: same answer as the
// sample's "/".
package main

import (
	"net"
	"net/http"
	"os"
)

func main() {
	body := []byte(`{"ok":true}`)
	http.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", "11")
		_, _ = w.Write(body)
	})
	if err := http.ListenAndServe(net.JoinHostPort("127.0.0.1", os.Getenv("PORT")), nil); err != nil {
		panic(err)
	}
}
