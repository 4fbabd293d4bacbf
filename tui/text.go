package tui

import (
	"strings"

	"github.com/charmbracelet/x/ansi"
)

// clean makes text the dashboard shows but does not write — lab errors
// (a child's log tail, an admin API's answer), progress lines, narration
// and titles from experiment files — safe for one line of a frame: each
// run of line breaks, tabs and other white-space controls becomes one
// space, escape sequences go, and what is left of the control characters
// is dropped. Uncleaned, a newline added lines to the frame (the renderer
// then drops the header off the top), a tab or carriage return moved the
// cursor past what the layout measured, and an escape sequence could
// clear the screen or recolour everything after it.
func clean(s string) string {
	if !needsClean(s) {
		return s
	}
	var sb strings.Builder
	space := false // the last rune written stands for a white-space control
	for _, r := range s {
		switch {
		case r == '\n' || r == '\r' || r == '\t' || r == '\v' || r == '\f':
			if !space {
				sb.WriteByte(' ')
			}
			space = true
			continue
		case r == ' ' && space:
			continue // the indentation after a line break
		}
		sb.WriteRune(r)
		space = false
	}
	out := ansi.Strip(sb.String())
	if !needsClean(out) {
		return out
	}
	return strings.Map(func(r rune) rune {
		if isControl(r) {
			return -1
		}
		return r
	}, out)
}

func needsClean(s string) bool {
	for _, r := range s {
		if isControl(r) {
			return true
		}
	}
	return false
}

// isControl reports the C0 and C1 control characters and DEL.
func isControl(r rune) bool {
	return r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0)
}
