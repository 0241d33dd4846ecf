package highlight

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
)

// joinLines reassembles the source text that lines were made from.
func joinLines(lines []Line) string {
	texts := make([]string, len(lines))
	for i, line := range lines {
		var b strings.Builder
		for _, tok := range line {
			b.WriteString(tok.Text)
		}
		texts[i] = b.String()
	}
	return strings.Join(texts, "\n")
}

// findToken returns the first token whose text is text, failing if none is.
func findToken(tb testing.TB, lines []Line, text string) Token {
	tb.Helper()
	for _, line := range lines {
		for _, tok := range line {
			if tok.Text == text {
				return tok
			}
		}
	}
	tb.Fatalf("no token %q in %v", text, lines)
	return Token{}
}

func TestLinesPython(t *testing.T) {
	t.Parallel()

	source := "import os\n\ndef handler(event, context):\n    # greet\n    return {\"body\": 'hello'}\n"
	lines := Lines("main.py", source)

	if got, want := len(lines), strings.Count(source, "\n"); got != want {
		t.Fatalf("got %d lines, want %d: %v", got, want, lines)
	}
	if len(lines[1]) != 0 {
		t.Errorf("blank line has tokens: %v", lines[1])
	}
	if tok := findToken(t, lines, "def"); !strings.HasPrefix(tok.Class, "k") {
		t.Errorf("def: class %q, want keyword class k*", tok.Class)
	}
	if tok := findToken(t, lines, "'hello'"); !strings.HasPrefix(tok.Class, "s") {
		t.Errorf("'hello': class %q, want string class s*", tok.Class)
	}
	if tok := findToken(t, lines, "# greet"); !strings.HasPrefix(tok.Class, "c") {
		t.Errorf("comment: class %q, want comment class c*", tok.Class)
	}
	if got := Language("main.py", source); got != "Python" {
		t.Errorf("Language = %q, want Python", got)
	}
}

func TestLinesLanguages(t *testing.T) {
	t.Parallel()

	tests := []struct {
		filename, source, language, keyword string
	}{
		{"main.go", "package main\n\nfunc main() {}\n", "Go", "func"},
		{"index.js", "export const handler = async (event) => {\n  return 1;\n};\n", "JavaScript", "const"},
		{"index.mjs", "function f() { return null }\n", "JavaScript", "function"},
		// No extension (a custom runtime's bootstrap): chosen by content.
		{"bootstrap", "#!/bin/sh\nif true; then exec ./main; fi\n", "Bash", "if"},
	}
	for _, tt := range tests {
		t.Run(tt.filename, func(t *testing.T) {
			t.Parallel()
			if got := Language(tt.filename, tt.source); got != tt.language {
				t.Errorf("Language = %q, want %q", got, tt.language)
			}
			lines := Lines(tt.filename, tt.source)
			if tok := findToken(t, lines, tt.keyword); !strings.HasPrefix(tok.Class, "k") {
				t.Errorf("%s: class %q, want keyword class k*", tt.keyword, tok.Class)
			}
		})
	}
}

func TestLanguagePlaintext(t *testing.T) {
	t.Parallel()

	for _, filename := range []string{"README", "notes.txt"} {
		if got := Language(filename, "just some words\n"); got != "plaintext" {
			t.Errorf("Language(%q) = %q, want plaintext", filename, got)
		}
		for _, line := range Lines(filename, "just some words\n") {
			for _, tok := range line {
				if tok.Class != "" {
					t.Errorf("Lines(%q): plain text has class %q", filename, tok.Class)
				}
			}
		}
	}
}

// TestLinesMarkupUnescaped checks that markup in sources survives as raw
// text: escaping is the console template's job, and escaping here too would
// show "&lt;" to the user.
func TestLinesMarkupUnescaped(t *testing.T) {
	t.Parallel()

	sources := map[string]string{
		"index.html": "<p>hi</p>\n<script>alert(1)</script>\n<img src=x onerror=\"alert('&amp;')\">",
		"main.py":    "x = \"<script>alert(1)</script>\"  # </pre><b>\ny = '&lt;'\n",
		"notes.txt":  "<script>alert(1)</script>\n",
	}
	for filename, source := range sources {
		t.Run(filename, func(t *testing.T) {
			t.Parallel()
			lines := Lines(filename, source)
			if got, want := joinLines(lines), strings.TrimSuffix(source, "\n"); got != want {
				t.Errorf("text changed:\n got %q\nwant %q", got, want)
			}
		})
	}
}

func TestLinesRoundTrip(t *testing.T) {
	t.Parallel()

	tests := []struct{ filename, source string }{
		{"empty.py", ""},
		{"newline.py", "\n"},
		{"blank.go", "\n\n\n"},
		{"nofinal.py", "def f():\n    return 1"},
		{"nofinal.txt", "one\ntwo"},
		{"trailing.js", "let a = 1;\n\n"},
		{"tabs.go", "package x\n\nfunc f() {\n\tif true {\n\t\treturn\n\t}\n}\n"},
		{"multi.py", "s = \"\"\"\nline one\n\n  line three\n\"\"\"\n"},
		{"unicode.js", "// héllo 🙂\nconst s = \"日本語\";\n"},
		{"broken.py", "def (:\n  ]]] \"unterminated\n`$@\n"},
		{"unknown.zzz", "whatever } { this is\n\tnot code\n"},
		{"template.yaml", "key: value\nlist:\n  - a # c\n"},
		{"Dockerfile", "FROM python:3.12\nRUN pip install x\n"},
	}
	for _, tt := range tests {
		t.Run(tt.filename, func(t *testing.T) {
			t.Parallel()
			lines := Lines(tt.filename, tt.source)
			if got, want := joinLines(lines), strings.TrimSuffix(tt.source, "\n"); got != want {
				t.Errorf("round trip:\n got %q\nwant %q", got, want)
			}
			wantLines := strings.Count(tt.source, "\n")
			if tt.source != "" && !strings.HasSuffix(tt.source, "\n") {
				wantLines++
			}
			if len(lines) != wantLines {
				t.Errorf("got %d lines, want %d: %v", len(lines), wantLines, lines)
			}
			for _, line := range lines {
				for _, tok := range line {
					if tok.Text == "" || strings.Contains(tok.Text, "\n") {
						t.Errorf("bad token text %q", tok.Text)
					}
				}
			}
		})
	}
}

func TestLinesCRLF(t *testing.T) {
	t.Parallel()

	for _, lines := range [][]Line{
		Lines("main.py", "a = 1\r\nb = 2\r\n"),
		PlainLines("a = 1\r\nb = 2\r\n"),
	} {
		if got, want := joinLines(lines), "a = 1\nb = 2"; got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	}
}

func TestPlainLinesMatchesLines(t *testing.T) {
	t.Parallel()

	for _, source := range []string{"\n", "a", "a\n", "a\n\nb\n\n"} {
		if got, want := joinLines(PlainLines(source)), joinLines(Lines("x.txt", source)); got != want {
			t.Errorf("PlainLines(%q) = %q, Lines gives %q", source, got, want)
		}
		if got, want := len(PlainLines(source)), len(Lines("x.txt", source)); got != want {
			t.Errorf("PlainLines(%q): %d lines, Lines gives %d", source, got, want)
		}
	}
}

func TestCSS(t *testing.T) {
	t.Parallel()

	css := string(CSS())
	for _, want := range []string{
		"@media (prefers-color-scheme: dark) {",
		".chroma .k {",
		".chroma .s2 {",
		".chroma .c1 {",
		".chroma {",
	} {
		if !strings.Contains(css, want) {
			t.Errorf("CSS lacks %q:\n%s", want, css)
		}
	}
	if strings.Contains(css, "style=") {
		t.Errorf("CSS contains style=")
	}
	if strings.Count(css, "{") != strings.Count(css, "}") {
		t.Errorf("CSS braces unbalanced:\n%s", css)
	}
	// Every rule is scoped under the container so it cannot restyle the page.
	selectors := regexp.MustCompile(`(?m)^\s*([^@/{}][^{]*?)\s*\{`)
	for _, m := range selectors.FindAllStringSubmatch(css, -1) {
		for sel := range strings.SplitSeq(m[1], ",") {
			sel = strings.TrimSpace(sel)
			if sel != ".chroma" && !strings.HasPrefix(sel, ".chroma ") {
				t.Errorf("selector %q not scoped under .chroma", sel)
			}
		}
	}
	// Chroma's rules for its own markup must not reach the console's.
	for _, unwanted := range []string{".bg", ".chroma .line ", ".chroma .ln "} {
		if strings.Contains(css, unwanted) {
			t.Errorf("CSS contains %q", unwanted)
		}
	}
	// Every light rule is overridden in dark mode, so no light colour (such
	// as near-black punctuation) leaks onto the dark background.
	light, dark, ok := strings.Cut(css, "@media (prefers-color-scheme: dark)")
	if !ok {
		t.Fatal("no dark block")
	}
	for _, m := range selectors.FindAllStringSubmatch(light, -1) {
		sel := strings.TrimSpace(m[1])
		if !strings.Contains(dark, " "+sel+",") && !strings.Contains(dark, " "+sel+" {") {
			t.Errorf("light rule %q not overridden in the dark block", sel)
		}
	}
	if !bytes.Equal(CSS(), CSS()) {
		t.Errorf("CSS not stable")
	}
}
