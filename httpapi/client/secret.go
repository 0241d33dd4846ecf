package client

import (
	"context"
	"encoding/base64"
	"unicode/utf8"

	"github.com/slessio/sless/httpapi/wire"
)

// Secret is a namespace secret as the API shows it: name, version, the
// functions that use it; never its value, which is write-only.
type Secret = wire.Secret

// RolledFunction is a function version a SetSecret made, because the
// function uses the secret.
type RolledFunction = wire.RolledFunction

// SetSecret sets the value of the namespace's secret name, creating it or
// making a new version of it; every function that uses it gets a new
// version running the new value (Secret.Rolled). A value that is UTF-8 text
// is sent as text, any other bytes as base64. Errors: *Error with
// CodeNotFound for a name that is no valid name (no secret has that path),
// CodeTooLarge for a value over 64 KiB, CodeUnavailable when the platform
// has no secrets key.
func (c *Client) SetSecret(ctx context.Context, name string, value []byte) (*Secret, error) {
	var req wire.SetSecretRequest
	if utf8.Valid(value) {
		req.Value = Ptr(string(value))
	} else {
		req.ValueBase64 = Ptr(base64.StdEncoding.EncodeToString(value))
	}
	return jsonOf[Secret](ctx, c, routeSetSecret, req, name)
}

// ListSecrets returns the namespace's secrets, without their values.
func (c *Client) ListSecrets(ctx context.Context) ([]Secret, error) {
	var out wire.SecretList
	if _, err := c.doJSON(ctx, routeListSecrets, nil, &out); err != nil {
		return nil, err
	}
	return out.Secrets, nil
}

// GetSecret returns one secret, without its value. Errors: *Error with
// CodeNotFound.
func (c *Client) GetSecret(ctx context.Context, name string) (*Secret, error) {
	return jsonOf[Secret](ctx, c, routeGetSecret, nil, name)
}

// DeleteSecret deletes a secret and destroys every version of its value.
// Errors: *Error with CodeNotFound, CodeConflict while functions use it
// (the message names them).
func (c *Client) DeleteSecret(ctx context.Context, name string) error {
	_, err := c.doJSON(ctx, routeDeleteSecret, nil, nil, name)
	return err
}
