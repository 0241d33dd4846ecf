package httpapi

import (
	"encoding/base64"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/slessio/sless/command"
	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/httpapi/wire"
	"github.com/slessio/sless/store"
)

func (s *Server) registerSecretRoutes(g *echo.Group) {
	g.GET("/secrets", s.listSecrets)
	g.GET("/secrets/:name", s.getSecret)
	g.PUT("/secrets/:name", s.setSecret)
	g.DELETE("/secrets/:name", s.deleteSecret)
}

// newSecret renders a secret's read model: never its value.
func newSecret(sec store.SecretInfo) wire.Secret {
	return wire.Secret{Namespace: sec.Namespace, Name: sec.Name, Version: sec.Version,
		CreatedAt: pgTime(sec.CreatedAt), UpdatedAt: pgTime(sec.UpdatedAt), UsedBy: orEmpty(sec.UsedBy)}
}

// listSecrets serves GET /v1/namespaces/{ns}/secrets.
func (s *Server) listSecrets(c echo.Context) error {
	ss, err := s.cfg.Store.ListSecrets(c.Request().Context(), c.Param("ns"))
	if err != nil {
		return err
	}
	out := wire.SecretList{Secrets: make([]wire.Secret, len(ss))}
	for i, sec := range ss {
		out.Secrets[i] = newSecret(sec)
	}
	return c.JSON(http.StatusOK, out)
}

// getSecret serves GET /v1/namespaces/{ns}/secrets/{name}: its versions and
// users, not its value (no route returns one).
func (s *Server) getSecret(c echo.Context) error {
	name, err := nameParam(c, "secret")
	if err != nil {
		return err
	}
	sec, err := s.cfg.Store.GetSecret(c.Request().Context(), c.Param("ns"), name)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, newSecret(sec))
}

// setSecret serves PUT /v1/namespaces/{ns}/secrets/{name}: a new version of
// the value (command.SetSecret), 201 when the secret is new, 200 otherwise,
// with the function versions it made.
func (s *Server) setSecret(c echo.Context) error {
	ref, err := pathRef(c, "secret")
	if err != nil {
		return err
	}
	var req wire.SetSecretRequest
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	var value []byte
	switch {
	case req.Value != nil && req.ValueBase64 != nil:
		return domain.FieldErrorf("value", "give value or value_base64, not both")
	case req.Value != nil:
		value = []byte(*req.Value)
	case req.ValueBase64 != nil:
		if value, err = base64.StdEncoding.DecodeString(*req.ValueBase64); err != nil {
			return domain.FieldErrorf("value_base64", "is not standard base64")
		}
	default:
		return domain.FieldErrorf("value", "is required (or value_base64 for a binary value)")
	}
	ctx := c.Request().Context()
	set, rolled, err := s.cmd.SetSecret(ctx, metadata(c), command.SetSecretInput{Ref: ref, Value: value})
	if err != nil {
		return err
	}
	sec, err := s.cfg.Store.GetSecret(ctx, ref.Namespace, ref.Name)
	if err != nil {
		return err
	}
	out := newSecret(sec)
	out.Version = set.Version // a set after this one may have landed meanwhile
	for _, r := range rolled {
		out.Rolled = append(out.Rolled, wire.RolledFunction{Function: r.Function, Version: r.Version})
	}
	status := http.StatusOK
	if set.CreatedAt.Equal(set.UpdatedAt) {
		status = http.StatusCreated
	}
	return c.JSON(status, out)
}

// deleteSecret serves DELETE /v1/namespaces/{ns}/secrets/{name}: the secret
// and every version of its value, destroyed (command.DeleteSecret); 409
// while a function uses it.
func (s *Server) deleteSecret(c echo.Context) error {
	ref, err := pathRef(c, "secret")
	if err != nil {
		return err
	}
	if err := s.cmd.DeleteSecret(c.Request().Context(), metadata(c), ref); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}
