//go:build race

package openai

// raceEnabled: the race detector is on (it makes closures allocate).
const raceEnabled = true
