package htmlreport

// labelSize is the font size (SVG units) of band and line labels where it
// is largest: on phones (report.css); elsewhere they are 9.5 units and the
// room kept for them is generous.
const labelSize = 12

// asciiWidth is the advance of each printable ASCII character, from ' ' to
// '~', in thousandths of an em of DejaVu Sans, one of the widest fonts a
// page's sans-serif resolves to (Linux's usual one), so a label measured
// here is at least as wide as drawn.
var asciiWidth = [95]uint16{
	318, 400, 460, 838, 636, 950, 780, 275, 390, 390, 500, 838, 318, 361, 318, 337, // space … /
	636, 636, 636, 636, 636, 636, 636, 636, 636, 636, // 0 … 9
	337, 337, 838, 838, 838, 531, 1000, // : … @
	684, 686, 698, 770, 632, 575, 775, 752, 295, 295, 656, 557, 863, // A … M
	748, 787, 603, 787, 695, 635, 611, 732, 684, 989, 685, 611, 685, // N … Z
	390, 337, 390, 838, 500, 500, // [ … `
	613, 635, 550, 635, 615, 352, 635, 634, 278, 278, 579, 278, 974, // a … m
	634, 612, 635, 635, 411, 521, 392, 634, 592, 818, 592, 592, 525, // n … z
	636, 337, 636, 838, // { … ~
}

// boldWidth is how much wider the bold face sets the same text.
const boldWidth = 1.13

// textWidth estimates the width of s in SVG units at font size size:
// characters outside ASCII (↑, ≥, ×, ✓) count as wide as a math sign.
func textWidth(s string, size float64, bold bool) float64 {
	var em float64
	for _, r := range s {
		switch {
		case r >= ' ' && r <= '~':
			em += float64(asciiWidth[r-' '])
		default:
			em += 838
		}
	}
	w := em / 1000 * size
	if bold {
		w *= boldWidth
	}
	return w
}
