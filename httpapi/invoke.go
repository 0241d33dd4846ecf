package httpapi

import (
	"github.com/labstack/echo/v4"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/store"
)

func (s *Server) registerInvokeRoutes(g *echo.Group) {
	g.POST("/functions/:name/invoke", s.invokeFunction)
}

// invokeFunction serves POST /v1/namespaces/{ns}/functions/{name}/invoke:
// the body is the function's event (JSON, or any body as its HTTP wrapper
// takes it) and the answer is the function's — status, headers and body, as
// /fn would give them — recorded with trigger kind "api"; no trigger is
// needed (Config.Proxy's Invoke). The token authorised it; the function
// never sees it. Errors keep the API's shape: 404 for an unknown function,
// 409 for one without a built version, and /fn's 413, 429, 502, 503, 504.
// With ?async=true (or X-Sless-Invocation-Type: async) the request is
// queued instead (enqueueInvoke).
func (s *Server) invokeFunction(c echo.Context) error {
	name, err := nameParam(c, "function")
	if err != nil {
		return err
	}
	if s.cfg.Proxy == nil {
		return domain.Errorf(domain.EUNAVAILABLE, "this server runs no functions: it has no invoke proxy")
	}
	async, err := isAsyncInvoke(c)
	if err != nil {
		return err
	}
	if async {
		return s.enqueueInvoke(c, name)
	}
	return s.cfg.Proxy.ServeInvoke(c.Response(), c.Request(), c.Param("ns"), name, store.InvocationAPI)
}
