package codestore

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"slices"
	"strings"
)

// digestVersion starts the hashed stream, so the encoding can change
// without two encodings ever producing the same digest.
const digestVersion = "sless-code-v1\n"

// Digest returns "sha256:<hex>" over the files' names, modes and contents,
// in name order. Archive details (timestamps, order, compression, directory
// entries) do not count, so the same code zipped twice has one digest. The
// mode (0o644 or 0o755) counts because the build context carries it.
func Digest(files []File) string {
	sorted := slices.Clone(files)
	slices.SortFunc(sorted, func(a, b File) int { return strings.Compare(a.Name, b.Name) })
	h := sha256.New()
	h.Write([]byte(digestVersion))
	var n [8]byte
	for _, f := range sorted {
		// Length prefixes keep (name, content) boundaries unambiguous.
		binary.BigEndian.PutUint64(n[:], uint64(len(f.Name)))
		h.Write(n[:])
		h.Write([]byte(f.Name))
		binary.BigEndian.PutUint64(n[:], uint64(f.Mode.Perm()))
		h.Write(n[:])
		binary.BigEndian.PutUint64(n[:], uint64(len(f.Data)))
		h.Write(n[:])
		h.Write(f.Data)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// digestHex returns the hex part of a "sha256:<hex>" digest.
func digestHex(digest string) string { return strings.TrimPrefix(digest, "sha256:") }

// isDigestHex reports whether s is the hex part of a digest: 64 lowercase
// hex digits, as the directories of Put's keys are named.
func isDigestHex(s string) bool {
	if len(s) != 2*sha256.Size {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
