// Package client is the typed Go client of the sless REST API (/v1), on
// which the Terraform provider and the CLI are built. It covers every route
// of a namespace: ensure, functions (create, get, list, update, delete,
// upload, source, versions, rollback, invoke), triggers, jobs, secrets
// (write-only values: set, never read back), the invocation log and the
// audit log. Invoke returns a function's answer whatever its status
// (InvokeResult); only the platform's refusals are errors.
//
// A Client holds the base URL, a bearer token and an *http.Client. The
// namespace of every call is the token's, derived from its sub claim with the
// server's formula (NamespaceOf) unless WithNamespace sets it.
//
// Every answer of 400 or more is an *Error carrying the HTTP status and the
// API's code, message and field, so callers tell the cases apart:
//
//	c, err := client.New("https://sless.example.com", token)
//	if err != nil {
//		return err
//	}
//	if _, err := c.EnsureNamespace(ctx); err != nil {
//		return err
//	}
//	fn, err := c.CreateFunction(ctx, client.CreateFunctionRequest{Name: "hello", Runtime: "python3.11"})
//	if client.IsConflict(err) {
//		fn, err = c.GetFunction(ctx, "hello") // exists already: adopt it
//	}
//	if err != nil {
//		return err
//	}
//	up, err := c.Upload(ctx, fn.Name, zipBytes)
//	if err != nil {
//		var apiErr *client.Error
//		if errors.As(err, &apiErr) && apiErr.Field != "" {
//			return fmt.Errorf("field %s: %s", apiErr.Field, apiErr.Message)
//		}
//		return err
//	}
//	log.Printf("version %d, build queued: %t", up.Version.Version, up.Queued)
//
// An error body that is not the API's JSON (a proxy's HTML page) is an
// *Error too, with the status and an empty Code: IsNotFound is true only for
// the API's own 404, never for a load balancer's.
//
// Each request goes through one table of routes (method, path template,
// query parameters); the tests check the table against the server's
// /v1/openapi.json and call every route against a real server.
package client
