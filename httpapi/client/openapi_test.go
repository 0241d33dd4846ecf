package client_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/slessio/sless/httpapi/client"
)

// TestRoutesMatchOpenAPI reads /v1/openapi.json from the real server and
// checks both ways: every route of the client, with its query parameters,
// is in the document, and every route of a namespace in the document is in
// the client's table (so the client follows when the API grows).
func TestRoutesMatchOpenAPI(t *testing.T) {
	t.Parallel()
	f := setup(t)
	res, err := http.Get(f.url + "/v1/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var doc struct {
		Paths map[string]map[string]struct {
			Parameters []struct {
				Name string `json:"name"`
				In   string `json:"in"`
			} `json:"parameters"`
		} `json:"paths"`
	}
	if err := json.NewDecoder(res.Body).Decode(&doc); err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("GET /v1/openapi.json: %d, %v", res.StatusCode, err)
	}

	inClient := map[string]bool{}
	for i, rt := range client.Routes {
		key := rt.Method + " " + rt.Path
		if rt.Method == "" || rt.Path == "" || inClient[key] {
			t.Errorf("route %d of the table is empty or a duplicate: %q", i, key)
			continue
		}
		inClient[key] = true
		op, ok := doc.Paths[rt.Path][strings.ToLower(rt.Method)]
		if !ok {
			t.Errorf("the client calls %s, which the OpenAPI document lacks", key)
			continue
		}
		var query []string
		for _, p := range op.Parameters {
			if p.In == "query" {
				query = append(query, p.Name)
			}
		}
		for _, q := range rt.Query {
			if !slices.Contains(query, q) {
				t.Errorf("the client sends ?%s= to %s; the document lists only %v", q, key, query)
			}
		}
	}

	for path, ops := range doc.Paths {
		if !strings.HasPrefix(path, "/v1/namespaces/{ns}/") {
			continue // health, the document itself, the operators' list of namespaces
		}
		for method := range ops {
			if key := strings.ToUpper(method) + " " + path; !inClient[key] {
				t.Errorf("the API serves %s, which the client does not call", key)
			}
		}
	}
}
