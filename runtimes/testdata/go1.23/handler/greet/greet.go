// Package greet is a package of the sample module, so that building the sample proves
// the user's go.mod is used.
package greet

// Text is the answer of the sample's /text case.
func Text() string { return "héllo ✓" }
