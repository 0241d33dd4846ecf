package domain

import (
	"net"
	"net/url"
	"strings"
)

// CallbackAllow is the operator's allow-list of callback targets
// (SLESS_CALLBACK_ALLOW): origins scheme://host[:port], where host may be
// "*.example.com" for its subdomains. Empty means callbacks are off.
type CallbackAllow []callbackOrigin

type callbackOrigin struct {
	scheme, host, port string
	wildcard           bool // host is a suffix: ".example.com"
}

// ParseCallbackAllow reads a comma-separated allow-list; it returns
// EINVALID naming the first entry that is not an http(s) origin.
func ParseCallbackAllow(s string) (CallbackAllow, error) {
	var out CallbackAllow
	for entry := range strings.SplitSeq(s, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		u, err := url.Parse(entry)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") ||
			u.RawQuery != "" || u.User != nil {
			return nil, Errorf(EINVALID, "callback allow-list: %q is not an origin such as https://hooks.example.com or https://*.example.com:8443", entry)
		}
		o := callbackOrigin{scheme: u.Scheme, host: strings.ToLower(u.Hostname()), port: u.Port()}
		if o.port == "" {
			o.port = defaultPort(u.Scheme)
		}
		if rest, ok := strings.CutPrefix(o.host, "*."); ok {
			o.host, o.wildcard = "."+rest, true
		}
		out = append(out, o)
	}
	return out, nil
}

func defaultPort(scheme string) string {
	if scheme == "https" {
		return "443"
	}
	return "80"
}

// Check returns EINVALID when raw is not an absolute http(s) URL that the
// allow-list admits (always, when the list is empty).
func (a CallbackAllow) Check(raw string) error {
	if len(a) == 0 {
		return FieldErrorf("X-Sless-Callback-Url", "callbacks are off on this platform (the operator's SLESS_CALLBACK_ALLOW is empty)")
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || len(raw) > 2048 {
		return FieldErrorf("X-Sless-Callback-Url", "must be an absolute http or https URL without credentials, at most 2048 bytes")
	}
	host, port := strings.ToLower(u.Hostname()), u.Port()
	if port == "" {
		port = defaultPort(u.Scheme)
	}
	for _, o := range a {
		if o.scheme != u.Scheme || o.port != port {
			continue
		}
		if host == o.host || (o.wildcard && strings.HasSuffix(host, o.host) && net.ParseIP(host) == nil) {
			return nil
		}
	}
	return FieldErrorf("X-Sless-Callback-Url", "%s://%s is not on the operator's callback allow-list", u.Scheme, net.JoinHostPort(host, port))
}
