package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// DefaultTimeout bounds a whole request, body included, when New is not
// given an *http.Client: as long as the server lets a 32 MiB upload take.
const DefaultTimeout = 5 * time.Minute

// Client calls the sless REST API of one namespace with one bearer token.
// It is safe for concurrent use.
type Client struct {
	baseURL   string
	token     string
	namespace string
	http      *http.Client
	userAgent string
}

// Option configures a Client in New.
type Option func(*Client)

// WithHTTPClient makes the Client send its requests with hc (timeouts,
// proxies, TLS settings, test transports).
func WithHTTPClient(hc *http.Client) Option { return func(c *Client) { c.http = hc } }

// WithNamespace sets the namespace explicitly instead of deriving it from the
// token's sub claim (NamespaceOf); for tokens that are not JWTs, or an
// operator acting in another namespace.
func WithNamespace(ns string) Option { return func(c *Client) { c.namespace = ns } }

// WithUserAgent sets the User-Agent header, e.g. "terraform-provider-sless/1.2".
func WithUserAgent(ua string) Option { return func(c *Client) { c.userAgent = ua } }

// New returns a Client for the API at baseURL (e.g. "https://sless.example.com")
// calling with token. Unless WithNamespace says otherwise, the namespace is
// derived from the token's sub claim as the server does (NamespaceOf). It
// fails when baseURL is not an absolute http(s) URL or no namespace can be had.
func New(baseURL, token string, opts ...Option) (*Client, error) {
	u, err := url.Parse(baseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("sless client: base URL %q must be an absolute http(s) URL", baseURL)
	}
	c := &Client{
		baseURL:   strings.TrimRight(baseURL, "/"),
		token:     token,
		http:      &http.Client{Timeout: DefaultTimeout},
		userAgent: "sless-client-go",
	}
	for _, opt := range opts {
		opt(c)
	}
	if c.namespace == "" {
		if c.namespace, err = NamespaceOf(token); err != nil {
			return nil, fmt.Errorf("cannot tell the namespace from the token: %w", err)
		}
	}
	return c, nil
}

// Namespace returns the namespace every call of c addresses.
func (c *Client) Namespace() string { return c.namespace }

// call is one request: a route, its path parameters after {ns}, the query,
// the body and where to decode a JSON answer (nil: none is read).
type call struct {
	route       routeID
	params      []string
	query       url.Values
	body        io.Reader
	contentType string
	header      http.Header // more request headers
	out         any
	// accept and text ask for another representation than JSON (the
	// human listing's text/plain), copied whole into text.
	accept string
	text   io.Writer
}

// jsonCall is a call whose body, when in is not nil, is in as JSON.
func jsonCall(r routeID, in, out any, params ...string) (call, error) {
	cl := call{route: r, params: params, out: out}
	if in != nil {
		data, err := json.Marshal(in)
		if err != nil {
			return call{}, fmt.Errorf("encode request: %w", err)
		}
		cl.body, cl.contentType = bytes.NewReader(data), "application/json"
	}
	return cl, nil
}

// jsonOf calls route r with the JSON body in (nil: none) and returns its
// decoded JSON answer.
func jsonOf[T any](ctx context.Context, c *Client, r routeID, in any, params ...string) (*T, error) {
	var out T
	if _, err := c.doJSON(ctx, r, in, &out, params...); err != nil {
		return nil, err
	}
	return &out, nil
}

// doJSON sends a JSON call and returns the answer's status.
func (c *Client) doJSON(ctx context.Context, r routeID, in, out any, params ...string) (int, error) {
	cl, err := jsonCall(r, in, out, params...)
	if err != nil {
		return 0, err
	}
	res, err := c.do(ctx, cl)
	if err != nil {
		return 0, err
	}
	return res.StatusCode, nil
}

// do sends cl and decodes a successful answer into cl.out. It returns the
// response (its body already read and closed) for the status and headers;
// an answer of 400 or more is an *Error.
func (c *Client) do(ctx context.Context, cl call) (*http.Response, error) {
	res, path, err := c.send(ctx, cl)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	rt := routes[cl.route]
	if res.StatusCode >= 400 {
		return nil, readError(res)
	}
	if cl.text != nil {
		if _, err := io.Copy(cl.text, res.Body); err != nil {
			return nil, fmt.Errorf("sless client: read the answer of %s %s: %w", rt.Method, path, err)
		}
		return res, nil
	}
	if cl.out == nil || res.StatusCode == http.StatusNoContent {
		return res, nil
	}
	if mt, _, _ := mime.ParseMediaType(res.Header.Get("Content-Type")); mt != "application/json" {
		return nil, fmt.Errorf("sless client: %s %s answered %d with %q, not JSON: is %s the sless API?",
			rt.Method, path, res.StatusCode, res.Header.Get("Content-Type"), c.baseURL)
	}
	if err := json.NewDecoder(res.Body).Decode(cl.out); err != nil {
		return nil, fmt.Errorf("sless client: decode the answer of %s %s: %w", rt.Method, path, err)
	}
	return res, nil
}

// send sends cl and returns the response, whatever its status (the caller
// closes its body), and the path it went to. cl.accept "" asks for JSON.
func (c *Client) send(ctx context.Context, cl call) (*http.Response, string, error) {
	rt := routes[cl.route]
	path, err := rt.expand(append([]string{c.namespace}, cl.params...), cl.query)
	if err != nil {
		return nil, "", err
	}
	req, err := http.NewRequestWithContext(ctx, rt.Method, c.baseURL+path, cl.body)
	if err != nil {
		return nil, "", fmt.Errorf("sless client: %w", err)
	}
	switch cl.accept {
	case "":
		req.Header.Set("Accept", "application/json")
	case anyType:
	default:
		req.Header.Set("Accept", cl.accept)
	}
	req.Header.Set("User-Agent", c.userAgent)
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	if cl.contentType != "" {
		req.Header.Set("Content-Type", cl.contentType)
	}
	for k, v := range cl.header {
		req.Header[k] = v
	}
	res, err := c.http.Do(req)
	if err != nil {
		return nil, "", fmt.Errorf("sless client: %s %s: %w", rt.Method, path, err)
	}
	return res, path, nil
}

// anyType as a call's accept sends no Accept header: the answer is not the
// API's but a function's, in whatever type it likes.
const anyType = "-"

// Ptr returns a pointer to v, for the optional fields of UpdateFunctionRequest
// and CreateTriggerRequest.
func Ptr[T any](v T) *T { return &v }
