// Package highlight tokenises function source files for the web console.
//
// It deliberately returns tokens, not HTML. The console renders every byte
// of user code through html/template, which escapes it, and it never builds
// a template.HTML from user data; chroma's HTML formatter would hand us
// ready-made markup that bypasses that escaping, and in its default mode it
// writes style= attributes that the console's Content-Security-Policy
// forbids. So Lines splits a file into lines of (class, text) tokens, and
// the page styles the classes with the stylesheet from CSS:
//
//	<pre class="chroma">{{range .Lines}}{{range .}}<span class="{{.Class}}">{{.Text}}</span>{{end}}
//	{{end}}</pre>
//
// Class is one of chroma's short class names ("k", "s2", "c1", ...) or ""
// for plain text. Every rule in CSS is scoped under the container class
// "chroma", so the code must be wrapped in an element with that class, and
// CSS styles only that container and the token classes, leaving the
// console free to add its own line and line-number markup.
//
// Lines expects text: the caller leaves binary files out (codestore's
// SourceFile.Binary says which they are). Lexers are regular-expression driven, so callers
// should cap the size of what they pass in.
package highlight
