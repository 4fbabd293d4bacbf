package tui

import (
	"math"

	"github.com/charmbracelet/lipgloss"

	"github.com/levee-lab/levee/internal/wire"
	"github.com/levee-lab/levee/lab/runfiles"
)

var (
	stBorder   = lipgloss.NewStyle().Foreground(cGrey)
	stTitle    = lipgloss.NewStyle().Bold(true)
	stDim      = lipgloss.NewStyle().Foreground(cGrey)
	stBold     = lipgloss.NewStyle().Bold(true)
	stStale    = lipgloss.NewStyle().Foreground(cYellow).Bold(true)
	stErr      = lipgloss.NewStyle().Foreground(cRed).Bold(true)
	stInfo     = lipgloss.NewStyle().Foreground(cCyan)
	stRec      = lipgloss.NewStyle().Foreground(cRed).Bold(true)
	stActive   = lipgloss.NewStyle().Foreground(cRed).Bold(true)
	stUp       = lipgloss.NewStyle().Foreground(cGreen)
	stDown     = lipgloss.NewStyle().Foreground(cRed).Bold(true)
	stEjected  = lipgloss.NewStyle().Foreground(cOrange).Bold(true)
	stProbing  = lipgloss.NewStyle().Foreground(cYellow)
	stSelected = lipgloss.NewStyle().Reverse(true)
	stLogo     = lipgloss.NewStyle().Bold(true).Foreground(cCyan)
)

// levelStyle renders the overload level as a badge in its colour.
func levelStyle(level string) lipgloss.Style {
	s := lipgloss.NewStyle().Bold(true).Padding(0, 1)
	switch level {
	case wire.LevelGreen:
		return s.Background(cGreen).Foreground(lipgloss.Color("0"))
	case wire.LevelYellow:
		return s.Background(cYellow).Foreground(lipgloss.Color("0"))
	case wire.LevelRed:
		return s.Background(cRed).Foreground(lipgloss.Color("15"))
	case wire.LevelBlack:
		return s.Background(lipgloss.Color("0")).Foreground(lipgloss.Color("15")).Underline(true)
	default:
		return s.Foreground(cGrey)
	}
}

// successStyle colours a success percentage: green ≥ 99.9, yellow ≥ 99.
// successText is a success rate (ok / finished) as a percentage and its
// style; "—", dim, when nothing finished (finished 0): the rate's 1 is
// then a convention, and a stall must not read as 100 %.
func successText(rate float64, finished uint64) (string, lipgloss.Style) {
	if finished == 0 {
		return "—", stDim
	}
	return fmtPct(rate * 100), successStyle(rate * 100)
}

// successValue is a priority's success rate in % for the charts, NaN (a
// gap) when nothing finished.
func successValue(ps runfiles.PrioritySample) float64 {
	if ps.SuccessFinished == 0 {
		return math.NaN()
	}
	return ps.SuccessRate * 100
}

func successStyle(pct float64) lipgloss.Style {
	switch {
	case pct >= 99.9:
		return lipgloss.NewStyle().Foreground(cGreen).Bold(true)
	case pct >= 99:
		return lipgloss.NewStyle().Foreground(cYellow).Bold(true)
	default:
		return lipgloss.NewStyle().Foreground(cRed).Bold(true)
	}
}
