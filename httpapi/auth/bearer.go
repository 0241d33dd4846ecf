package auth

import "strings"

// BearerToken returns the token of an Authorization header value of the form
// "Bearer <token>" (the scheme is case-insensitive, RFC 7235 §2.1). It returns
// EUNAUTHORIZED when the header is empty or uses another scheme.
func BearerToken(authorization string) (string, error) {
	scheme, token, ok := strings.Cut(strings.TrimSpace(authorization), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", unauthorized("missing bearer token")
	}
	token = strings.TrimSpace(token)
	if token == "" {
		return "", unauthorized("missing bearer token")
	}
	return token, nil
}
