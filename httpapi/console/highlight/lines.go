package highlight

import (
	"strings"

	"github.com/alecthomas/chroma/v2"
	"github.com/alecthomas/chroma/v2/lexers"
)

// Token is a run of source text and the CSS class that colours it; Class is
// "" for plain text. Text is raw source and must be escaped by the caller's
// template.
type Token struct {
	Class string
	Text  string
}

// Line is one line of source, without its newline, as a sequence of tokens.
// An empty line has no tokens.
type Line []Token

// tokeniseOptions normalises CRLF and lone CR line endings to LF, so lines
// never carry a stray "\r".
var tokeniseOptions = &chroma.TokeniseOptions{State: "root", EnsureLF: true}

// Lines splits source into highlighted lines, choosing the lexer from
// filename and then from the content. An empty source has no lines, and a
// missing final newline does not lose the last line. It never fails: if a
// lexer cannot tokenise the source, the lines come back as plain text.
func Lines(filename, source string) (lines []Line) {
	if source == "" {
		return nil
	}
	// Lexers are third-party regular-expression state machines that panic
	// on some internal errors; a source view must degrade, not crash.
	defer func() {
		if recover() != nil {
			lines = PlainLines(source)
		}
	}()
	it, err := chroma.Coalesce(lexerFor(filename, source)).Tokenise(tokeniseOptions, source)
	if err != nil {
		return PlainLines(source)
	}
	split := chroma.SplitTokensIntoLines(it.Tokens())
	lines = make([]Line, 0, len(split))
	for i, tokens := range split {
		line := make(Line, 0, len(tokens))
		ended := false
		for _, tok := range tokens {
			text, cut := strings.CutSuffix(tok.Value, "\n")
			ended = ended || cut
			if text == "" {
				continue
			}
			line = append(line, Token{Class: class(tok.Type), Text: text})
		}
		// Only the last line can lack a newline; if it is also empty it is
		// an artefact of empty tokens after the final newline, not a line.
		if i == len(split)-1 && !ended && len(line) == 0 {
			break
		}
		lines = append(lines, line)
	}
	return lines
}

// Language returns the display name of the lexer Lines would use, such as
// "Python", "Go" or "plaintext".
func Language(filename, source string) string {
	lexer := lexerFor(filename, source)
	if lexer == lexers.Fallback {
		return "plaintext"
	}
	return lexer.Config().Name
}

func lexerFor(filename, source string) chroma.Lexer {
	if lexer := lexers.Match(filename); lexer != nil {
		return lexer
	}
	if lexer := lexers.Analyse(source); lexer != nil {
		return lexer
	}
	return lexers.Fallback
}

// class maps a token type to chroma's short CSS class, walking up to the
// subcategory and category when a subtype has no class of its own, as
// chroma's HTML formatter does.
func class(t chroma.TokenType) string {
	for {
		if cls, ok := chroma.StandardTypes[t]; ok {
			return cls
		}
		if t == 0 {
			return ""
		}
		t = t.Parent()
	}
}

// PlainLines splits source into unhighlighted lines with the same line
// ending rules as Lines: for a file too large to run a lexer over.
func PlainLines(source string) []Line {
	source = strings.ReplaceAll(source, "\r\n", "\n")
	source = strings.ReplaceAll(source, "\r", "\n")
	source = strings.TrimSuffix(source, "\n")
	if source == "" {
		// A source of just a newline is one empty line.
		return []Line{{}}
	}
	texts := strings.Split(source, "\n")
	lines := make([]Line, len(texts))
	for i, text := range texts {
		if text != "" {
			lines[i] = Line{{Text: text}}
		}
	}
	return lines
}
