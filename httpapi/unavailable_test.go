package httpapi_test

import (
	"context"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/slessio/sless/httpapi"
	"github.com/slessio/sless/store"
)

// While the database is away, the API answers 503 EUNAVAILABLE with a
// Retry-After, reads and writes alike, and says nothing of the cause's
// addresses.
func TestDatabaseAwayAnswers503WithRetryAfter(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now: connections are refused
	host, port, _ := net.SplitHostPort(addr)
	cfg, err := pgxpool.ParseConfig("postgres://sless@" + host + ":" + port + "/sless?connect_timeout=2")
	if err != nil {
		t.Fatal(err)
	}
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	f := setup(t, func(c *httpapi.Config) { c.Store = store.New(pool, nil) })
	c := f.tenant()
	for _, r := range []*response{
		c.do(http.MethodGet, c.p("/functions"), nil),
		c.do(http.MethodPost, c.p("/functions"), map[string]any{"name": "away", "runtime": "python3.11"}),
	} {
		r.wantError(http.StatusServiceUnavailable, "UNAVAILABLE", "", "database")
		secs, err := strconv.Atoi(r.header.Get("Retry-After"))
		if err != nil || secs < 1 || secs > 30 {
			t.Errorf("Retry-After %q, want a few seconds", r.header.Get("Retry-After"))
		}
		if strings.Contains(string(r.body), port) {
			t.Errorf("the answer names the database's address: %s", r.body)
		}
	}
}
