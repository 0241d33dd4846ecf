package highlight

import (
	"bytes"
	"fmt"
	"strings"
	"sync"

	"github.com/alecthomas/chroma/v2"
	"github.com/alecthomas/chroma/v2/formatters/html"
	"github.com/alecthomas/chroma/v2/styles"
)

const (
	lightStyle = "github"
	darkStyle  = "github-dark"
	// container is the selector chroma's WriteCSS roots every rule at.
	container = ".chroma"
)

// CSS returns a stylesheet for the classes in Lines' tokens, to be served
// as a static file (the console's Content-Security-Policy forbids inline
// styles). Every rule is scoped under the "chroma" container class; the
// colours follow the browser's prefers-color-scheme. The result must not be
// modified.
func CSS() []byte { return css() }

var css = sync.OnceValue(func() []byte {
	light := rules(lightStyle)
	dark := rules(darkStyle)

	var b bytes.Buffer
	b.WriteString("/* Code highlighting: chroma " + lightStyle + ", " + darkStyle + " when the browser prefers dark. */\n")
	for _, r := range light {
		b.WriteString(r.String())
	}
	b.WriteString("@media (prefers-color-scheme: dark) {\n")
	// The dark style leaves some classes unstyled (they take the container's
	// colour), so without a reset they would keep the light style's colours
	// and backgrounds, e.g. near-black punctuation on the dark background.
	var reset []string
	for _, r := range light {
		if r.selector != container {
			reset = append(reset, r.selector)
		}
	}
	if len(reset) > 0 {
		fmt.Fprintf(&b, "  %s { color: inherit; background-color: transparent; font-weight: inherit; font-style: inherit; text-decoration: inherit }\n",
			strings.Join(reset, ", "))
	}
	for _, r := range dark {
		b.WriteString("  " + r.String())
	}
	b.WriteString("}\n")
	return b.Bytes()
})

type rule struct{ selector, body string }

func (r rule) String() string { return r.selector + " { " + r.body + " }\n" }

// tokenSelectors are the selectors of the classes Lines can emit. Chroma's
// other rules style its own markup (a bare ".bg" for standalone documents,
// ".line" as a flex box, line-number tables) and would restyle the
// console's elements if they happened to share those names.
var tokenSelectors = func() map[string]bool {
	sel := map[string]bool{container: true}
	for t, cls := range chroma.StandardTypes {
		if t >= 0 && cls != "" { // negative types are chroma's markup, not tokens
			sel[container+" ."+cls] = true
		}
	}
	return sel
}()

// rules returns the CSS rules chroma writes for the named style that apply
// to the container or to token classes.
func rules(name string) []rule {
	style := styles.Get(name)
	if style.Name != name {
		// styles.Get falls back silently; the names above are constants,
		// so a mismatch means a chroma upgrade renamed a style.
		panic("highlight: chroma style " + name + " not found")
	}
	var buf bytes.Buffer
	f := html.New(html.WithClasses(true), html.WithCSSComments(false))
	if err := f.WriteCSS(&buf, style); err != nil {
		panic("highlight: write chroma css: " + err.Error()) // bytes.Buffer does not fail
	}
	var out []rule
	for line := range strings.Lines(buf.String()) {
		selector, body, ok := strings.Cut(strings.TrimSpace(line), " { ")
		if !ok || !tokenSelectors[selector] {
			continue
		}
		out = append(out, rule{selector: selector, body: strings.TrimSpace(strings.TrimSuffix(body, "}"))})
	}
	return out
}
