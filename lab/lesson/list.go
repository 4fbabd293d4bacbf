package lesson

import (
	"fmt"
	"io"
	"strings"

	"github.com/charmbracelet/x/ansi"

	"github.com/levee-lab/levee/internal/textwrap"
)

// minTextWidth is the narrowest the title column may get before the text
// moves to lines of its own under the row.
const minTextWidth = 30

// WriteList prints lessons as a table — number, name, seed articles,
// title — with each lesson's one-line summary under its title. width > 0
// wraps the text to fit a terminal that many columns wide; width ≤ 0
// leaves lines whole (for pipes and files).
func WriteList(w io.Writer, lessons []Lesson, width int) error {
	numW, nameW, seedW := len("no."), len("name"), len("seed")
	for _, l := range lessons {
		numW = max(numW, runes(l.Number))
		nameW = max(nameW, runes(l.Name))
		seedW = max(seedW, runes(seeds(l)))
	}
	indent := numW + 2 + nameW + 2 + seedW + 2
	textW := 0 // no wrapping
	if width > 0 {
		textW = width - indent
		if textW < minTextWidth {
			// Too narrow for a column: text goes under the row, indented.
			indent, textW = numW+2, max(width-numW-2, 10)
		}
	}
	var b strings.Builder
	row := func(num, name, seed string) {
		fmt.Fprintf(&b, "%s  %s  %s  ", pad(num, numW), pad(name, nameW), pad(seed, seedW))
	}
	row("no.", "name", "seed")
	b.WriteString("title · what it shows\n")
	for _, l := range lessons {
		row(l.Number, l.Name, seeds(l))
		lines := append(wrap(l.Title, textW), wrap(l.Line, textW)...)
		if indent == numW+2 {
			trimRight(&b) // narrow: the row holds number, name and seed only
			b.WriteString("\n")
		} else {
			b.WriteString(lines[0] + "\n")
			lines = lines[1:]
		}
		for _, s := range lines {
			b.WriteString(strings.Repeat(" ", indent) + s + "\n")
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// seeds is the seed articles column: "003 000", or "-" when none.
func seeds(l Lesson) string {
	if len(l.Articles) == 0 {
		return "-"
	}
	return strings.Join(l.Articles, " ")
}

// trimRight drops the spaces at the end of b.
func trimRight(b *strings.Builder) {
	s := strings.TrimRight(b.String(), " ")
	b.Reset()
	b.WriteString(s)
}

func runes(s string) int { return ansi.StringWidth(s) }

func pad(s string, w int) string { return s + strings.Repeat(" ", max(0, w-runes(s))) }

func wrap(s string, width int) []string { return textwrap.Lines(s, width) }
