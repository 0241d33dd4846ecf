// Package auth owns who a caller is: it verifies the Bearer JWT of a request and
// turns it into a Principal (subject, namespace, operator flag).
//
// Tokens are accepted only with a signature we can check: HS256 against the one
// configured shared secret (the development default is a key generated into the
// data dir by LoadOrCreateKey), or RS256/ES256 against the public keys of a JWKS
// read from a file or URL. The JWKS is cached; a token naming an unknown key id
// makes the verifier re-read it at most once per refresh interval, and concurrent
// callers share that one fetch, so forged key ids cannot turn into a flood of
// outbound requests (RFC 8725 §2.1/§3.1; research note D1, D2).
//
// A client sends the same token with every request, so a Verifier remembers
// the tokens it accepted (keyed by their SHA-256, at most
// Config.TokenCacheSize of them) until their exp, never past it and without
// the leeway: a token sent again costs a hash and a lookup, not a signature
// check. Rejected tokens are never remembered. A JWKS refresh that replaces
// the keys makes every remembered token be checked again, so a key removed
// by the identity provider stops verifying at once, cached tokens included.
//
// The namespace of a caller is derived from the token's sub claim by Namespace;
// the formula is part of the product contract (SPEC §1) and must never change.
//
// Every failure is a domain error with code EUNAUTHORIZED and a short message
// that names the reason (expired, wrong issuer, ...) but never echoes key
// material or token contents.
//
// auth imports only the standard library, github.com/golang-jwt/jwt/v5 and
// sless/domain. It knows nothing about Echo; httpapi wraps Verify in middleware.
package auth
