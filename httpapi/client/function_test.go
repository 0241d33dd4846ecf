package client_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/httpapi/client"
)

// testFunctions: create, get, list, update and delete, with the 409 of a
// duplicate, the 400 naming a bad field and the 404 of a missing function.
func testFunctions(t *testing.T, f *fixture) {
	ctx := context.Background()
	c, _ := f.tenant(t)
	created, err := c.CreateFunction(ctx, client.CreateFunctionRequest{Name: "hello", Runtime: "python3.11", EnvVars: map[string]string{"GREETING": "hi"}})
	if err != nil {
		t.Fatal(err)
	}
	if created.Namespace != c.Namespace() || created.Phase != domain.PhasePending || created.MemoryMB != 128 ||
		created.TimeoutSec != 30 || created.Entrypoint != "handler.handle" || created.EnvVars["GREETING"] != "hi" ||
		created.ActiveVersion != 0 || created.LastBuiltAt != nil || created.CreatedAt.IsZero() {
		t.Fatalf("created %+v", created)
	}

	_, err = c.CreateFunction(ctx, client.CreateFunctionRequest{Name: "hello", Runtime: "python3.11"})
	wantError(t, err, http.StatusConflict, client.CodeConflict, "")
	if !client.IsConflict(err) || client.IsNotFound(err) {
		t.Fatalf("IsConflict/IsNotFound of %v", err)
	}
	_, err = c.CreateFunction(ctx, client.CreateFunctionRequest{Name: "Not_A_Label", Runtime: "python3.11"})
	wantError(t, err, http.StatusBadRequest, client.CodeInvalid, "name")
	if !client.IsInvalid(err) {
		t.Fatalf("IsInvalid(%v) is false", err)
	}
	_, err = c.CreateFunction(ctx, client.CreateFunctionRequest{Name: "cobol", Runtime: "cobol85"})
	wantError(t, err, http.StatusBadRequest, client.CodeInvalid, "runtime")

	got, err := c.GetFunction(ctx, "hello")
	if err != nil {
		t.Fatal(err)
	}
	if got.Name != created.Name || !got.CreatedAt.Equal(created.CreatedAt) || got.EnvVars["GREETING"] != "hi" {
		t.Fatalf("got %+v, created %+v", got, created)
	}
	list, err := c.ListFunctions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].Name != "hello" {
		t.Fatalf("listed %+v", list)
	}
	text, err := c.FunctionListing(ctx)
	if err != nil || !strings.Contains(text, "hello") || !strings.Contains(text, "python3.11") || strings.HasPrefix(text, "{") {
		t.Fatalf("human listing = %q (%v)", text, err)
	}

	updated, err := c.UpdateFunction(ctx, "hello", client.UpdateFunctionRequest{MemoryMB: client.Ptr(256), EnvVars: client.Ptr(map[string]string{})})
	if err != nil {
		t.Fatal(err)
	}
	if updated.MemoryMB != 256 || len(updated.EnvVars) != 0 || updated.Runtime != "python3.11" || updated.TimeoutSec != 30 {
		t.Fatalf("updated %+v", updated)
	}
	_, err = c.UpdateFunction(ctx, "hello", client.UpdateFunctionRequest{MemoryMB: client.Ptr(-1)})
	wantError(t, err, http.StatusBadRequest, client.CodeInvalid, "memory_mb")
	_, err = c.UpdateFunction(ctx, "absent", client.UpdateFunctionRequest{})
	wantError(t, err, http.StatusNotFound, client.CodeNotFound, "")

	if err := c.DeleteFunction(ctx, "hello"); err != nil {
		t.Fatal(err)
	}
	_, err = c.GetFunction(ctx, "hello")
	wantError(t, err, http.StatusNotFound, client.CodeNotFound, "")
	if !client.IsNotFound(err) {
		t.Fatalf("IsNotFound(%v) is false", err)
	}
	wantError(t, c.DeleteFunction(ctx, "hello"), http.StatusNotFound, client.CodeNotFound, "")
}
