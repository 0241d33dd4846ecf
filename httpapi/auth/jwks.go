package auth

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"strings"
)

// minRSABits is the smallest RSA modulus we trust; RFC 7518 §3.3 requires 2048.
const minRSABits = 2048

// jwk is one usable public key of a JWKS.
type jwk struct {
	kid string
	alg string // the JWK's pinned algorithm, "" when the set does not pin one
	key any    // *rsa.PublicKey or *ecdsa.PublicKey on P-256
}

// accepts reports whether the key may verify a token signed with alg: the key
// type must fit the algorithm, and a key that pins an algorithm only verifies that one.
func (k jwk) accepts(alg string) bool {
	if k.alg != "" && k.alg != alg {
		return false
	}
	switch k.key.(type) {
	case *rsa.PublicKey:
		return alg == "RS256"
	case *ecdsa.PublicKey:
		return alg == "ES256"
	}
	return false
}

// jwkJSON is the wire form of one key (RFC 7517 §4, RFC 7518 §6).
type jwkJSON struct {
	Kty string `json:"kty"`
	Kid string `json:"kid"`
	Use string `json:"use"`
	Alg string `json:"alg"`
	N   string `json:"n"`
	E   string `json:"e"`
	Crv string `json:"crv"`
	X   string `json:"x"`
	Y   string `json:"y"`
}

// parseJWKS decodes a JWKS document into its RSA and EC P-256 signing keys,
// grouped by kid. Keys of other types, curves or uses are skipped rather than
// rejected, because identity providers publish keys for other purposes in the
// same set. A document without a single usable key is an error, so a broken
// fetch never replaces a working set.
func parseJWKS(data []byte) (map[string][]jwk, error) {
	var doc struct {
		Keys []jwkJSON `json:"keys"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("decode jwks: %w", err)
	}
	keys := make(map[string][]jwk)
	var skipped []error
	for i, raw := range doc.Keys {
		if raw.Use != "" && raw.Use != "sig" {
			continue
		}
		k, err := parseJWK(raw)
		if err != nil {
			skipped = append(skipped, fmt.Errorf("key %d (kid %q): %w", i, raw.Kid, err))
			continue
		}
		if k.key != nil {
			keys[k.kid] = append(keys[k.kid], k)
		}
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("jwks has no usable RS256 or ES256 key: %w", errors.Join(skipped...))
	}
	return keys, nil
}

// parseJWK decodes one key; it returns a jwk with a nil key for a kind we do
// not verify with, and an error for a supported kind that is malformed.
func parseJWK(raw jwkJSON) (jwk, error) {
	k := jwk{kid: raw.Kid, alg: raw.Alg}
	switch {
	case raw.Kty == "RSA" && (raw.Alg == "" || raw.Alg == "RS256"):
		pub, err := parseRSA(raw.N, raw.E)
		if err != nil {
			return k, err
		}
		k.key = pub
	case raw.Kty == "EC" && raw.Crv == "P-256" && (raw.Alg == "" || raw.Alg == "ES256"):
		pub, err := parseP256(raw.X, raw.Y)
		if err != nil {
			return k, err
		}
		k.key = pub
	}
	return k, nil
}

// parseRSA builds an RSA public key from base64url n and e.
func parseRSA(n64, e64 string) (*rsa.PublicKey, error) {
	n, err := decodeB64URL(n64)
	if err != nil {
		return nil, fmt.Errorf("rsa n: %w", err)
	}
	e, err := decodeB64URL(e64)
	if err != nil {
		return nil, fmt.Errorf("rsa e: %w", err)
	}
	mod := new(big.Int).SetBytes(n)
	if mod.BitLen() < minRSABits {
		return nil, fmt.Errorf("rsa modulus has %d bits, want at least %d", mod.BitLen(), minRSABits)
	}
	if len(e) == 0 || len(e) > 4 {
		return nil, errors.New("rsa exponent out of range")
	}
	exp := 0
	for _, b := range e {
		exp = exp<<8 | int(b)
	}
	if exp < 3 || exp%2 == 0 {
		return nil, errors.New("rsa exponent out of range")
	}
	return &rsa.PublicKey{N: mod, E: exp}, nil
}

// parseP256 builds an ECDSA P-256 public key from base64url x and y, refusing
// points that are not on the curve (invalid-curve attacks).
func parseP256(x64, y64 string) (*ecdsa.PublicKey, error) {
	x, err := decodeB64URL(x64)
	if err != nil {
		return nil, fmt.Errorf("ec x: %w", err)
	}
	y, err := decodeB64URL(y64)
	if err != nil {
		return nil, fmt.Errorf("ec y: %w", err)
	}
	if len(x) != 32 || len(y) != 32 {
		return nil, errors.New("ec coordinates must be 32 bytes for P-256")
	}
	point := append(append([]byte{4}, x...), y...)
	pub, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), point)
	if err != nil {
		return nil, fmt.Errorf("ec point: %w", err)
	}
	return pub, nil
}

// decodeB64URL decodes base64url, tolerating the padding some providers add.
func decodeB64URL(s string) ([]byte, error) {
	return base64.RawURLEncoding.DecodeString(strings.TrimRight(s, "="))
}
