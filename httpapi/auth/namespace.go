package auth

import (
	"crypto/sha256"
	"encoding/hex"
)

// Namespace returns the namespace owned by the token subject sub:
// "sless-" followed by the hex of the first 8 bytes of SHA-256(sub).
// The formula is fixed by SPEC §1: existing namespaces, URLs and Terraform
// state depend on it.
func Namespace(sub string) string {
	sum := sha256.Sum256([]byte(sub))
	return "sless-" + hex.EncodeToString(sum[:8])
}
