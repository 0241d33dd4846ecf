package codestore

import (
	"path"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/slessio/sless/domain"
)

const (
	maxNameBytes      = 1024 // a whole path inside the archive
	maxComponentBytes = 255  // one path component (NAME_MAX on Linux)
)

// cleanName checks an archive entry name and returns it cleaned (no "./",
// no "//", no trailing "/"). It returns "" for the root directory ("./").
// Names are refused rather than repaired when they could mean a path outside
// the function's directory on any platform, or could break a line in
// generated text: "..", absolute paths, backslashes, drive letters, control
// characters. Errors are EINVALID and quote the raw name.
func cleanName(raw string) (string, error) {
	bad := func(why string) error {
		return domain.Errorf(domain.EINVALID, "zip entry %q: %s", raw, why)
	}
	if raw == "" {
		return "", domain.Errorf(domain.EINVALID, "a zip entry has an empty name")
	}
	if !utf8.ValidString(raw) {
		return "", bad("the name is not valid UTF-8")
	}
	for _, r := range raw {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == '\u2028' || r == '\u2029' {
			return "", bad("the name contains a control or line-break character")
		}
	}
	if strings.Contains(raw, `\`) {
		return "", bad(`backslashes are not allowed in names (zip paths use "/")`)
	}
	if len(raw) >= 2 && raw[1] == ':' && isASCIILetter(raw[0]) {
		return "", bad("drive letters are not allowed")
	}
	if strings.HasPrefix(raw, "/") {
		return "", bad("absolute paths are not allowed")
	}
	if len(raw) > maxNameBytes {
		return "", bad("the name is longer than 1024 bytes")
	}
	for _, c := range strings.Split(raw, "/") {
		if c == ".." {
			return "", bad(`".." path components are not allowed`)
		}
		if len(c) > maxComponentBytes {
			return "", bad("a path component is longer than 255 bytes")
		}
	}
	name := path.Clean(raw)
	if name == "." {
		return "", nil
	}
	// Redundant with the checks above on Linux; kept so a future platform's
	// notion of "local" is honoured too.
	if !filepath.IsLocal(name) {
		return "", bad("the path is not inside the archive")
	}
	return name, nil
}

func isASCIILetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }

// isDockerfile reports whether name is the build file the platform writes.
// Case-insensitive, because builders on case-insensitive file systems (and
// docker's fallback to "dockerfile") would pick up a user's "dockerfile".
func isDockerfile(name string) bool { return strings.EqualFold(name, "Dockerfile") }
