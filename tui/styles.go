package tui

import (
	"github.com/charmbracelet/lipgloss"

	"github.com/levee-lab/levee/internal/wire"
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
