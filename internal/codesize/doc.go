// Package codesize holds no code: its test keeps the repository's Go
// source within the sizes a reviewer can hold in mind — no non-test file
// over MaxFileLines lines, no function over MaxFuncLines lines.
package codesize

// The limits the test enforces.
const (
	MaxFileLines = 500
	MaxFuncLines = 100
)
