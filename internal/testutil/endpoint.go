package testutil

import (
	"context"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"
)

// endpointHost ends the host names EndpointURL makes for sockets.
const endpointHost = ".sock.invalid"

// EndpointURL returns a base URL this process can request paths of a
// driver's endpoint on: the endpoint itself when it is http(s), and for the
// local driver's "unix:/path.sock" an http URL whose host names the socket
// (hex, in labels), which EndpointDial dials.
func EndpointURL(endpoint string) string {
	path, ok := strings.CutPrefix(endpoint, "unix:")
	if !ok {
		return endpoint
	}
	h := hex.EncodeToString([]byte(path))
	var labels []string
	for len(h) > 60 {
		labels = append(labels, h[:60])
		h = h[60:]
	}
	return "http://" + strings.Join(append(labels, h), ".") + endpointHost
}

// EndpointDial is an http.Transport's DialContext for EndpointURL's URLs: it
// dials the socket a host names, and TCP for any other address.
func EndpointDial(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	host, _, err := net.SplitHostPort(addr)
	if err != nil || !strings.HasSuffix(host, endpointHost) {
		return d.DialContext(ctx, network, addr)
	}
	path, err := hex.DecodeString(strings.ReplaceAll(strings.TrimSuffix(host, endpointHost), ".", ""))
	if err != nil {
		return nil, fmt.Errorf("%s names no socket: %w", host, err)
	}
	return d.DialContext(ctx, "unix", string(path))
}

// EndpointClient returns an HTTP client of endpoints (see EndpointURL):
// with keep-alive, or a fresh connection per request.
func EndpointClient(timeout time.Duration, keepAlive bool) *http.Client {
	return &http.Client{Timeout: timeout, Transport: &http.Transport{
		Proxy: nil, DialContext: EndpointDial, MaxIdleConnsPerHost: 32, DisableKeepAlives: !keepAlive}}
}
