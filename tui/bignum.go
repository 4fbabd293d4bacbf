package tui

import "strings"

// bigFont draws digits 5 rows tall.
var bigFont = map[rune][5]string{
	'0': {"███", "█ █", "█ █", "█ █", "███"},
	'1': {" █ ", "██ ", " █ ", " █ ", "███"},
	'2': {"███", "  █", "███", "█  ", "███"},
	'3': {"███", "  █", "███", "  █", "███"},
	'4': {"█ █", "█ █", "███", "  █", "  █"},
	'5': {"███", "█  ", "███", "  █", "███"},
	'6': {"███", "█  ", "███", "█ █", "███"},
	'7': {"███", "  █", "  █", "  █", "  █"},
	'8': {"███", "█ █", "███", "█ █", "███"},
	'9': {"███", "█ █", "███", "  █", "███"},
	'.': {" ", " ", " ", " ", "█"},
	'%': {"█ █", "  █", " █ ", "█  ", "█ █"},
	'-': {"   ", "   ", "███", "   ", "   "},
	'—': {"   ", "   ", "███", "   ", "   "},
}

// bigText renders s in bigFont: 5 lines. Runes without a glyph are skipped.
func bigText(s string) []string {
	var rows [5]strings.Builder
	first := true
	for _, r := range s {
		g, ok := bigFont[r]
		if !ok {
			continue
		}
		for i := range rows {
			if !first {
				rows[i].WriteByte(' ')
			}
			rows[i].WriteString(g[i])
		}
		first = false
	}
	out := make([]string, 5)
	for i := range rows {
		out[i] = rows[i].String()
	}
	return out
}
