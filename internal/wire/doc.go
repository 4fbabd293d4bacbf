// Package wire is the contract between Levee's parts: the names and shapes
// that cross a process boundary or that more than one package must spell
// the same way. It holds the request outcomes and shed reasons, the HTTP
// headers and paths, the ready line (type, encoding and decoding), the
// Prometheus metric and label names, the defense, route, class, level and
// priority names, the JSON error body, and the fake model's knob patch.
//
// Every part imports wire and no wire string is typed twice outside tests;
// docs/CONTRACTS.md is generated from it in part and checked against it
// (go test ./internal/wire -update rewrites the generated tables).
//
// wire is a leaf: it imports only the standard library, holds no state and
// starts nothing. Behaviour stays with the parts: which priorities a level
// admits is package admit's, how a knob acts is package fakemodel's.
package wire
