// Package wire holds the JSON shapes of the REST API (/v1): the bodies the
// server (package httpapi) answers and accepts, shared with its Go client
// (package httpapi/client), so the two cannot drift apart.
//
// httpapi/openapi.go documents these types by reflection: each named struct
// becomes the OpenAPI component of the same name (Function, VersionList, ...),
// its json tags give the properties (required unless omitempty or a pointer)
// and a doc tag describes a property. Renaming a type or a tag here changes
// the served document.
//
// The package imports only the standard library and domain; the conversions
// from domain and store values live in httpapi. One answer is written here
// (WriteAccepted, the 202 of an asynchronous enqueue), since both the API
// and the /fn proxy send it.
package wire
