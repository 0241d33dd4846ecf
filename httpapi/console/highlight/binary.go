package highlight

import (
	"bytes"
	"unicode/utf8"
)

// sniffLen is how much of a file IsBinary searches for a NUL byte, the same
// heuristic git uses to decide that a file is binary.
const sniffLen = 8 << 10

// IsBinary reports whether content should be offered as a download rather
// than shown as text: it is not valid UTF-8, or it has a NUL byte in its
// first 8 KiB.
func IsBinary(content []byte) bool {
	return bytes.IndexByte(content[:min(len(content), sniffLen)], 0) >= 0 || !utf8.Valid(content)
}
