// Command sless is the single binary of the platform: the control plane
// (`serve`, `dev`), its maintenance commands (`migrate`, `projections
// rebuild`) and developer helpers (`token`).
//
// It owns configuration (flags over environment over embedded defaults) and
// wiring; it may import every package of the module.
package main
