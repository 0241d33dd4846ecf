// Package proxy is the public invoke path of sless: /fn/{ns}/{name}[/sub/path]
// with any method and no token (SPEC §5), proxied to the function's active
// version, recorded in the invocation log, and scale to zero with cold start.
// Its Invoke is the one other way in, for a function's authenticated owner
// (the API's POST .../functions/{name}/invoke, the console's invoke panel):
// the same forwarder, limits and records, without a trigger (below).
//
// # Routing
//
// The route table lives in memory: function → endpoint, version, timeout,
// phase, http triggers. It is loaded from the read model (store.ListRoutes)
// by Start, kept fresh by PostgreSQL LISTEN on store.RoutesChannel — the
// projections NOTIFY in the append transaction of every function event and
// every http trigger change, so a notice arrives on commit — and refreshed
// whole every RefreshInterval and whenever listening (re)starts, in case a
// notice was lost. No request queries the database.
//
// Namespace and name must be exactly valid (sless-<16 hex>, a DNS label):
// escapes, dots, '@', upper case or 64 characters are 400, and the upstream
// address only ever comes from the table, so no path can make the proxy
// connect elsewhere. A function unknown or without an http trigger is 404;
// with its triggers disabled, or not ready (phase Pending, Building or
// Failed, no endpoint) 503 with Retry-After. A Ready function without an
// endpoint — built, or its trigger enabled, and its rollout not done yet —
// is started for the request like a cold start (below), never a 503.
//
// Each control plane serves from its own driver. When the Scaler says
// which endpoints are its own (the local driver: the sockets of its data
// dir; DriverScaler asks the driver's OwnsEndpoint), an endpoint of
// another plane — whose processes die with it, on a host of its own — is
// used as none, decided when the route is applied: the function is started
// on this plane for a request (whatever its phase, a newer version may be
// building), and a later route with another plane's endpoint leaves the
// requests on this plane's instance, which follows that rollout in the
// background (a Scaler.Wake: the driver keeps an instance of the active
// version, or starts the new version and drains the old one; requests move
// once it answers). This plane's instance is stopped when idle, when a
// worker (maybe another plane's) stops the function — its endpoint goes
// away — and when the function is deleted (DriverScaler.StopHere: that
// worker's driver cannot reach this plane's processes). A Scaler that
// cannot say (Kubernetes: endpoints every plane shares) owns every
// endpoint, and stops nothing of its own.
//
// # Serving
//
// The Proxy is an http.Handler, which net/http's server can serve. Its own
// Server (server.go) serves it for less: a goroutine per connection reads
// each request head with fasthttp's parser and answers through a response
// writer of its own, with no background read, no goroutine and mostly no
// deadline per request; the client leaving is watched only while something
// waits on the request's context (serverctx.go). It takes only the proxy's
// requests in their common form — /fn/ and /async-fn/ targets, HTTP/1.1, a
// body with a Content-Length or none, a head of at most 4 KiB that both
// fasthttp's and net/http's rules accept, no Expect — and hands every other
// connection, with the bytes it read of it, to a fallback net/http server
// (the API's, whose handler routes /fn here too), which serves it from
// there on. Its answers are framed, sniffed and closed as net/http's are
// (TestServerAnswersAsNetHTTP), and the behaviour tests run on both.
//
// # Forwarding
//
// A forwarder of the proxy's own (forwarder.go), on its own pool of
// keep-alive connections per endpoint (upstream.go; at most
// MaxConnsPerFunction open — a Python process holds a thread per
// connection): the request head is written straight from the incoming
// request and the response head parsed on the handler's goroutine, with no
// request clone, no per-request context and no goroutine per connection.
// The method, the path below /fn/{ns}/{name} (escaped as received; the
// prefix goes in X-Forwarded-Prefix), the query, the body with its
// Content-Length (or chunked, as received) and the user's headers pass
// intact — Authorization and cookies included: they belong to the
// function, which may do its own auth. The one exception is a token of the
// sless API itself (Config.PlatformToken says which): it is removed, so a
// function cannot act on the platform as its caller; this path never needs
// one.
// Hop-by-hop headers (and those named in Connection) are removed both ways.
// X-Forwarded-For/-Proto/-Host are set from the connection; the client's are
// dropped unless the peer is in TrustedProxies. Redirects go back to the
// caller; a response body is flushed to the caller whenever the function
// pauses (chunked, event streams, long polls). The runtime's X-Sless-Log header is taken out of the response
// and stored with the invocation; X-Sless-Invocation-Id names the record in
// the request to the function and in the response.
//
// Limits: a body over MaxBodyBytes (6 MiB) is 413 and the function never
// sees any of it — at once when Content-Length says so; a chunked body is
// read whole first (256 KiB in memory, the rest in an unlinked temporary
// file: spool.go), before the function is woken or sent anything. A function
// past its timeout_sec is 504 (code TIMEOUT); one that does not answer 502
// (BAD_GATEWAY). A caller who disconnects cancels the upstream request; the
// record says 499.
//
// A function has at most its max_concurrency requests (Config.
// DefaultMaxConcurrency when it sets none; 0 unlimited) in flight on this
// proxy, waiting for a start included — an atomic counter per function,
// the one that also keeps it awake; beyond it 429 (RATE_LIMITED) with
// Retry-After. With Config.ClientRate, each client address (IPv4, IPv6 /64;
// the client behind TrustedProxies, as for X-Forwarded-For) has a token
// bucket of ClientBurst: beyond it 429 with Retry-After, before any lookup
// and not recorded. Buckets full again are dropped; at most 2^18 are kept.
//
// Error bodies have the API's shape {"error": {"code", "message"}}, with
// the code in an X-Sless-Error header too (ErrorHeader: a caller tells the
// platform's 502 from the function's own by it; a function cannot set it),
// and say only what a stranger may know: the function's phase, that it failed to
// start. Why — a build's output, a start's traceback with the paths of the
// host — is in the invocation record (its error), which only the owner
// reads, and in the function's status or the proxy's log. A request refused before forwarding is recorded
// with the bytes it brought: its Content-Length, else its body read and
// dropped up to MaxBodyBytes.
//
// # Invoke by the owner
//
// Invoke serves a request its caller (httpapi, the console) has
// authenticated as the function's owner: the function runs whatever its
// triggers — without an http trigger, or with it disabled, it is woken like
// a cold start and put to sleep when idle like any — as "/" with the
// request's method, query and body, and the record's trigger kind is the
// caller's (store.InvocationAPI). The caller's Authorization and Cookie
// headers are not passed (they are the platform's credentials), errors tell
// the owner the detail kept for the record (why a start failed), and a
// function without a built active version is 409 saying why. The route
// table may lag the read model by a notification: a function it does not
// know, or knows without a built version, is read from the store first.
//
// # Scale to zero
//
// Idleness is runtime state, kept here and not in the event log (as Knative's
// activator does): the desired state — active version, enabled http trigger —
// does not change when a function sleeps. A function with no request in
// flight for its idle period (IdleTimeout, 10 min; IdleTimeouts per
// "<ns>/<name>", 0 never) is stopped through the Scaler — after the
// invocation log confirms that no other replica served it meanwhile
// (through /fn or Invoke), so N
// proxies agree on idleness without talking to each other. The next request
// holds — at most MaxWaiting per function, at most the shorter of its
// timeout_sec and WakeTimeout, then 503 with Retry-After — while one
// Scaler.Wake runs for all of them (and on, for the next ones, when a
// request gives up), then proceeds: none is lost, and one process starts.
// Requests are counted in flight before they look at the state a sleep
// changes under a lock, so a busy function is never stopped. A connection
// refused by an endpoint believed awake (stopped or restarted behind the
// proxy's back) wakes the function and retries the request once — nothing
// had been sent. DriverScaler implements Scaler with a driver.Driver.
//
// # Tracing
//
// When spans are exported (tracing.Enabled; tracing.go), each /fn request
// is a server span "<METHOD> /fn/:ns/:fn" ("/async-fn/:ns/:fn" for the
// path that queues), the child of the caller's traceparent, and Invoke and
// ServeInvoke are a client span "proxy.invoke" under their caller's
// (the delivery job's, the API request's):
//
//	GET /fn/:ns/:fn  or  proxy.invoke     namespace, function, version, invocation id, status; an error on 5xx
//	  └ cold start                        the wait for the function's start, when the request had one
//
// The function gets that span's trace context (the global propagator's
// headers: traceparent, tracestate, baggage) in place of the caller's, so
// its own spans are its children; the runtimes pass it on in
// event._headers. An asynchronous request is queued with its enqueue
// span's trace context in its headers, and each delivery's span links to
// it. With export off nothing of this runs: the caller's trace headers
// reach the function as they came, like any other header.
//
// # Invocation log and metrics
//
// Every request to a known function becomes a store.Invocation handed to
// Config.Invocations (the store's batching writer) without blocking; Record
// takes the cron and job runs of the workers into the same log and metrics.
// The Prometheus series are listed on the metrics type.
//
// proxy may import domain, store and driver (the port, for DriverScaler); never workers.
package proxy
