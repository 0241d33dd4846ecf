package client

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"strings"

	"github.com/slessio/sless/httpapi/auth"
	"github.com/slessio/sless/httpapi/wire"
)

// NamespaceOf returns the namespace the server gives the caller of token:
// auth.Namespace of its sub claim. It reads the claim WITHOUT verifying the
// signature (only the server can); a token it accepts may still be refused.
// It fails when token is not a JWT or has no sub.
func NamespaceOf(token string) (string, error) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return "", errors.New("the token is not a JWT (header.payload.signature)")
	}
	payload, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[1], "="))
	if err != nil {
		return "", errors.New("the token's payload is not base64url")
	}
	var claims struct {
		Sub string `json:"sub"`
	}
	if err := json.Unmarshal(payload, &claims); err != nil {
		return "", errors.New("the token's payload is not a JSON object with a string sub")
	}
	if claims.Sub == "" {
		return "", errors.New("the token has no sub claim")
	}
	return auth.Namespace(claims.Sub), nil
}

// EnsureResult is the answer of EnsureNamespace; Created is true when this
// call created the namespace.
type EnsureResult = wire.Namespace

// EnsureNamespace creates the client's namespace unless it exists
// (idempotent; the Terraform provider calls it once when configured).
// Errors: *Error with CodeUnauthorized or CodeForbidden for a token that
// does not own the namespace.
func (c *Client) EnsureNamespace(ctx context.Context) (*EnsureResult, error) {
	return jsonOf[EnsureResult](ctx, c, routeEnsureNamespace, nil)
}

// Metrics writes the namespace's own Prometheus series (sless_function_*:
// requests, errors, durations, cold starts, instances) to w, in the text
// exposition format. Errors: *Error with CodeUnavailable when the server
// keeps no function metrics.
func (c *Client) Metrics(ctx context.Context, w io.Writer) error {
	_, err := c.do(ctx, call{route: routeMetrics, text: w})
	return err
}
