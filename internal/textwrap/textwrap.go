// Package textwrap breaks plain text into lines for a terminal.
package textwrap

import (
	"strings"

	"github.com/charmbracelet/x/ansi"
)

// Lines breaks s into lines at most width columns wide, at spaces only, so
// that commands and names in the text (default-terminal, 04-node-loss) are
// never split; a word wider than width gets a line of its own. width ≤ 0,
// or a text that fits, returns s whole. There is always at least one line
// (callers print the first after a label): a text of spaces only wider
// than width is one empty line.
func Lines(s string, width int) []string {
	if width <= 0 || ansi.StringWidth(s) <= width {
		return []string{s}
	}
	var out []string
	line, lineW := "", 0
	for _, word := range strings.Fields(s) {
		w := ansi.StringWidth(word)
		switch {
		case line == "":
			line, lineW = word, w
		case lineW+1+w <= width:
			line, lineW = line+" "+word, lineW+1+w
		default:
			out = append(out, line)
			line, lineW = word, w
		}
	}
	if line != "" || len(out) == 0 {
		out = append(out, line)
	}
	return out
}
