// Sample function of the runtime conformance suite: one case per path (event["_path"]).
// Its twins in ../../python3.11/handler and ../../nodejs20/handler behave the same.
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"strings"
	"time"

	"example.com/sample/greet"
)

// logger is made at load time and holds os.Stdout: its output must still be captured.
var logger = log.New(os.Stdout, "", 0)

func init() {
	if os.Getenv("SAMPLE_FAIL_LOAD") != "" {
		panic("load failed on purpose")
	}
	var ms time.Duration
	fmt.Sscan(os.Getenv("SAMPLE_LOAD_DELAY_MS"), &ms)
	time.Sleep(ms * time.Millisecond)
	log.SetFlags(0)
	fmt.Println("sample loaded")
}

func explode() {
	panic("kaboom")
}

// Handle is the sample's entrypoint.
func Handle(ctx context.Context, event map[string]any) (any, error) {
	path, _ := event["_path"].(string)
	switch path {
	case "", "/":
		return map[string]any{"ok": true}, nil
	case "/echo":
		return event, nil
	case "/size":
		body, _ := event["body"].(string)
		return map[string]any{"length": len([]rune(body))}, nil
	case "/list":
		return []any{1, "two", nil}, nil
	case "/number":
		return 42, nil
	case "/bool":
		return true, nil
	case "/null":
		return nil, nil
	case "/html":
		return "  <h1>hi</h1>", nil
	case "/text":
		return greet.Text(), nil
	case "/status":
		return map[string]any{"statusCode": 201, "headers": map[string]string{"X-Custom": "yes"}, "body": map[string]any{"created": true}}, nil
	case "/status-text":
		return map[string]any{"statusCode": 404, "body": "not here"}, nil
	case "/status-ctype":
		return map[string]any{"statusCode": 200, "headers": map[string]any{"Content-Type": "text/csv"}, "body": "a,b\n"}, nil
	case "/raise":
		return nil, errors.New("boom")
	case "/panic":
		explode()
	case "/log":
		id := event["_query"].(map[string]any)["id"].(string)
		fmt.Println("start", id)
		time.Sleep(50 * time.Millisecond) // the other requests would interleave here
		logger.Print("middle ", id)
		log.Print("end ", id)
		return map[string]any{"id": id}, nil
	case "/big-log":
		for i := 0; i < 2000; i++ {
			fmt.Printf("%s %d\n", strings.Repeat("é", 30), i)
		}
		return "printed", nil
	case "/sleep":
		select {
		case <-time.After(30 * time.Second):
		case <-ctx.Done():
			time.Sleep(30 * time.Second) // a function that ignores its deadline
		}
		return "woke", nil
	case "/job":
		fmt.Print("partial")
		return map[string]any{"event": event, "done": true}, nil
	}
	return nil, fmt.Errorf("no case %q", path)
}
