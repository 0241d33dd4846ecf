package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"reflect"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/slessio/sless/domain"
)

// decodeJSON reads the request body (at most 1 MiB) into v strictly: one JSON
// object, no unknown fields, no trailing data, the right types. Whatever the
// Content-Type says, the body is read as JSON, so `curl -d '{...}'` works.
// Errors are EINVALID naming the field when there is one, ETOOLARGE for a
// body over the limit.
func decodeJSON(c echo.Context, v any) error {
	req := c.Request()
	body, err := io.ReadAll(http.MaxBytesReader(c.Response().Writer, req.Body, maxJSONBytes))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return domain.Errorf(domain.ETOOLARGE, "the JSON body is larger than %d bytes", maxJSONBytes)
		}
		return domain.Errorf(domain.EINVALID, "could not read the request body")
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return domain.Errorf(domain.EINVALID, "the request body must be a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return jsonError(err, reflect.TypeOf(v))
	}
	if _, err := dec.Token(); err != io.EOF {
		return domain.Errorf(domain.EINVALID, "the request body must hold one JSON object and nothing after it")
	}
	return nil
}

// jsonError explains a decoding error in terms of the request's fields
// (of a body decoded into a value of type into).
func jsonError(err error, into reflect.Type) error {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntax):
		return domain.Errorf(domain.EINVALID, "malformed JSON at byte %d: %s", syntax.Offset, syntax.Error())
	case errors.Is(err, io.ErrUnexpectedEOF):
		return domain.Errorf(domain.EINVALID, "malformed JSON: the body ends too early")
	case errors.As(err, &typ):
		if typ.Field == "" {
			return domain.Errorf(domain.EINVALID, "the request body must be a JSON object, not %s", typ.Value)
		}
		return domain.FieldErrorf(fieldName(typ.Field), "must be %s, not %s", kindName(typ.Type), typ.Value)
	}
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		field, _ := strconv.Unquote(name)
		field = fieldName(field)
		if near := domain.Suggest(field, jsonFields(into)); near != "" {
			return domain.FieldErrorf(field, "is not a known field (did you mean %q?)", near)
		}
		return domain.FieldErrorf(field, "is not a known field")
	}
	return domain.Errorf(domain.EINVALID, "malformed JSON: %v", err)
}

// maxFieldName caps a field name an error repeats: one the client made up
// (an unknown field, a key of env_vars) may be as long as the body.
const maxFieldName = 128

// fieldName is the name of a field in a body as errors name it: cut to
// maxFieldName bytes.
func fieldName(s string) string { return domain.Truncate(s, maxFieldName) }

// jsonFields returns the JSON names of the fields of the struct t (or *t).
func jsonFields(t reflect.Type) []string {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t.Kind() != reflect.Struct {
		return nil
	}
	var names []string
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" {
			names = append(names, name)
		}
	}
	return names
}

// kindName names a Go type the way a JSON client thinks of it.
func kindName(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Map, reflect.Struct:
		return "an object"
	case reflect.Slice, reflect.Array:
		return "an array"
	}
	return "a " + t.String()
}

// nameParam returns the path parameter {name}, the name of a kind
// ("function", "trigger", "job"). One that is no valid name
// (domain.IsName) is ENOTFOUND, as any unknown name is: nothing can have
// it, and the store is not asked about a string PostgreSQL may not even
// hold (a NUL).
func nameParam(c echo.Context, kind string) (string, error) {
	name := c.Param("name")
	if !domain.IsName(name) {
		return "", domain.Errorf(domain.ENOTFOUND, "%s %.80q not found", kind, name)
	}
	return name, nil
}

// functionFilter returns ?function=, the function a list is narrowed to
// ("" for all), and whether it can match anything: a string that is no
// valid name matches nothing.
func functionFilter(c echo.Context) (string, bool) {
	fn := c.QueryParam("function")
	return fn, fn == "" || domain.IsName(fn)
}

// intParam parses a positive integer path or query parameter; a bad one is
// EINVALID naming it.
func intParam(name, raw string) (int64, error) {
	n, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || n < 0 {
		return 0, domain.FieldErrorf(name, "%q is not a non-negative integer", raw)
	}
	return n, nil
}
