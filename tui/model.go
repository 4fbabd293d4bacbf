package tui

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/charmbracelet/bubbles/help"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/levee-lab/levee/internal/wire"
	"github.com/levee-lab/levee/lab"
	"github.com/levee-lab/levee/lab/lesson"
	"github.com/levee-lab/levee/lab/runfiles"
)

// Defaults for the Options.
const (
	DefaultStopTimeout = 15 * time.Second
	DefaultHistory     = 400 // points kept per series: enough for a chart 200 cells wide
	rateFactor         = 1.25
	spikeFactor        = 3
	spikeDuration      = 10 * time.Second
)

// defenseOrder is the order defenses are listed in; unknown names follow,
// sorted.
var defenseOrder = wire.DefenseNames()

var defenseAbbrev = map[string]string{
	wire.DefenseRateLimit: "RL", wire.DefenseGuard: "GUARD", wire.DefenseBulkhead: "BULK", wire.DefenseBudget: "BUDGET",
	wire.DefenseBreaker: "BRK", wire.DefenseRetry: "RETRY", wire.DefenseFallback: "FB",
}

// Option configures a Model.
type Option func(*Model)

// WithStopTimeout bounds how long quitting waits for Controls.Stop.
func WithStopTimeout(d time.Duration) Option {
	return func(m *Model) {
		if d > 0 {
			m.stopTimeout = d
		}
	}
}

// WithKill sets what a second interrupt while the lab stops does: kill
// ends the lab at once (lab.Launcher.Kill: every child SIGKILLed and
// reaped, the work folder removed), and Run returns ErrKilled without
// waiting any longer. The first interrupt — the q or ctrl+c key, or
// SIGINT, SIGTERM or SIGHUP — stops the lab as always; the second, of
// either kind, calls kill. Without it a second quit key only stops the
// dashboard from waiting (Run then waits for Stop itself).
func WithKill(kill func()) Option {
	return func(m *Model) { m.hurry.kill = kill }
}

// WithHistory sets how many points each chart series keeps.
func WithHistory(n int) Option {
	return func(m *Model) {
		if n > 0 {
			m.history = n
		}
	}
}

// Model is the dashboard's Bubble Tea model. Use New; a *Model implements
// tea.Model. All fields are owned by the Bubble Tea event loop.
type Model struct {
	ctrl        lab.Controls
	samples     <-chan runfiles.Sample
	keys        keyMap
	help        help.Model
	stopTimeout time.Duration
	history     int
	log         *Log // may be nil
	hurry       *hurry

	width, height int

	last       runfiles.Sample // the newest Sample; valid when nSamples > 0
	nSamples   int
	series     [][]*ring // per panel, per series
	lastFresh  float64   // Elapsed of the newest Sample with a fresh gateway scrape
	everFresh  bool
	recStart   float64 // Elapsed when recording was first seen on
	recording  bool
	recDir     string
	faults     []lab.FaultStatus
	defenses   map[string]bool
	lesson     lab.LessonState
	redis      lab.RedisStatus
	paused     bool
	samplesEnd bool // the Samples channel closed: the lab stopped

	panelOpen bool // the defenses panel
	panelSel  int
	showHelp  bool
	page      int

	status    string
	statusErr bool
	shownErrs []string // the errors the status line showed, oldest first (at most maxShownErrs; a repeat of the last is not kept): Run prints them whole when the dashboard ends
	stopping  bool
	stopped   bool  // Controls.Stop returned
	stopErr   error // what it returned
	recBusy   bool  // a StartRecording or StopRecording command is running

	lessons       []lesson.Lesson // the picker's list (WithLessons)
	startLesson   StartLesson
	switchTimeout time.Duration
	pick          picker
	switching     string // the lesson a switch is starting; "" when none runs
	prompt        prompt

	// The current layout: which panels show (indexes into panels, in page
	// order) and their rendered boxes for the current page, by slot.
	lay      layout
	visible  []int
	rendered []string
}

// New returns a dashboard over ctrl. It reads ctrl.Samples() until the
// channel closes.
func New(ctrl lab.Controls, opts ...Option) *Model {
	m := &Model{
		ctrl:          ctrl,
		samples:       ctrl.Samples(),
		keys:          defaultKeyMap(),
		help:          newHelp(),
		stopTimeout:   DefaultStopTimeout,
		hurry:         &hurry{killed: make(chan struct{})},
		switchTimeout: DefaultSwitchTimeout,
		history:       DefaultHistory,
		width:         80,
		height:        24,
	}
	for _, o := range opts {
		o(m)
	}
	m.resetSeries()
	m.refreshControls()
	m.relayout()
	return m
}

// resetSeries empties every chart series.
func (m *Model) resetSeries() {
	m.series = make([][]*ring, len(panels))
	for i, p := range panels {
		m.series[i] = make([]*ring, len(p.series))
		for j := range p.series {
			m.series[i][j] = newRing(m.history)
		}
	}
}

// attach shows a new lab (after a lesson switch): everything the old one
// drew is forgotten, and samples come from the new one.
func (m *Model) attach(ctrl lab.Controls) tea.Cmd {
	m.ctrl, m.samples = ctrl, ctrl.Samples()
	m.last, m.nSamples, m.lastFresh, m.everFresh = runfiles.Sample{}, 0, 0, false
	m.recStart, m.recording, m.recDir, m.samplesEnd = 0, false, "", false
	m.prompt, m.panelOpen, m.page = prompt{}, false, 0
	m.resetSeries()
	m.refreshControls()
	m.renderPanels()
	return waitSample(m.samples)
}

func newHelp() help.Model {
	h := help.New()
	h.ShortSeparator = "  "
	return h
}

// Messages. A sample or the end of samples comes tagged with its channel:
// after a lesson switch, what the old lab's channel still says is ignored.
type (
	sampleMsg     runfiles.Sample
	chanSampleMsg struct {
		ch <-chan runfiles.Sample
		s  runfiles.Sample
	}
	samplesDoneMsg struct{ ch <-chan runfiles.Sample }
	stoppedMsg     struct{ err error }
	// recordingMsg is the result of StartRecording (start) or StopRecording.
	recordingMsg struct {
		start bool
		dir   string
		err   error
	}
)

// waitSample is the command that blocks on the Samples channel; Update
// issues it again after each Sample, so redraws follow the lab's ticks.
func waitSample(ch <-chan runfiles.Sample) tea.Cmd {
	return func() tea.Msg {
		s, ok := <-ch
		if !ok {
			return samplesDoneMsg{ch}
		}
		return chanSampleMsg{ch, s}
	}
}

// Init starts reading Samples.
func (m *Model) Init() tea.Cmd {
	if m.log != nil {
		return tea.Batch(waitSample(m.samples), waitLog(m.log))
	}
	return waitSample(m.samples)
}

// Update handles Samples, keys and window sizes.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case chanSampleMsg:
		if msg.ch != m.samples {
			return m, nil // the lab before a switch
		}
		return m.Update(sampleMsg(msg.s))
	case sampleMsg:
		m.addSample(runfiles.Sample(msg))
		m.refreshControls()
		m.renderPanels()
		return m, waitSample(m.samples)
	case switchedMsg:
		return m, m.switched(msg)
	case logReadyMsg:
		for _, ln := range m.log.take() {
			m.showLog(ln)
		}
		return m, waitLog(m.log)
	case logMsg:
		m.showLog(logLine(msg))
		return m, nil
	case samplesDoneMsg:
		if msg.ch != m.samples {
			return m, nil
		}
		m.samplesEnd = true
		if !m.stopping && m.switching == "" {
			m.setStatus("the lab stopped: no more samples (q quits)", false)
		}
		return m, nil
	case recordingMsg:
		m.recordingDone(msg)
		return m, nil
	case stoppedMsg:
		m.stopped, m.stopErr = true, msg.err
		if msg.err != nil {
			m.setStatus("stop: "+msg.err.Error(), true)
		}
		return m, tea.Quit
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
		m.relayout()
		return m, nil
	case tea.KeyMsg:
		if msg.Type == tea.KeyRunes && len(msg.Runes) > 1 && !msg.Paste {
			return m, m.handleKeys(msg)
		}
		return m.handleKey(msg)
	}
	return m, nil
}

// handleKeys handles a message of several typed runes one key at a time.
// Bubble Tea reports the printable keys that arrive in one read — fast
// typing, a lagging SSH link, tmux send-keys — as one KeyRunes message
// ("++", "1r"), which matches no binding: each key is what was pressed.
// (A bracketed paste stays one message: only the prediction prompt takes it.)
func (m *Model) handleKeys(msg tea.KeyMsg) tea.Cmd {
	var cmds []tea.Cmd
	for _, r := range msg.Runes {
		one := msg
		one.Runes = []rune{r}
		_, cmd := m.handleKey(one)
		cmds = append(cmds, cmd)
	}
	return tea.Batch(cmds...)
}

// setRate asks the lab for rate r and says what came of it.
func (m *Model) setRate(r float64) {
	if err := m.ctrl.SetRate(r); err != nil {
		m.setStatus("rate unchanged: "+err.Error(), true)
		return
	}
	m.setStatus(fmt.Sprintf("target rate %s/s (ramp paused)", fmtNum(r)), false)
}

// setStatus shows s (cleaned: it often carries a lab error or a progress
// line) in the status line.
func (m *Model) setStatus(s string, isErr bool) {
	m.status, m.statusErr = clean(s), isErr
	if isErr && (len(m.shownErrs) == 0 || m.shownErrs[len(m.shownErrs)-1] != m.status) {
		if len(m.shownErrs) == maxShownErrs {
			m.shownErrs = append(m.shownErrs[:0], m.shownErrs[1:]...)
		}
		m.shownErrs = append(m.shownErrs, m.status)
	}
}

// maxShownErrs bounds the errors kept for Run to print at the end.
const maxShownErrs = 20

// refreshControls reads the lab's control state that Samples do not carry.
// These readers return at once (Controls): they only read the lab's memory.
func (m *Model) refreshControls() {
	m.noteFaultErrors(m.ctrl.Faults())
	m.defenses = m.ctrl.Defenses()
	m.lesson = m.ctrl.Lesson()
	m.redis = m.ctrl.Redis()
	m.paused = m.ctrl.RampPaused()
	m.refreshPrompt()
	rec := m.ctrl.Recording()
	if rec && !m.recording {
		m.recStart = m.last.Elapsed
	}
	m.recording = rec
}

func (m *Model) addSample(s runfiles.Sample) {
	m.last = s
	m.nSamples++
	if !s.GatewayStale {
		m.lastFresh, m.everFresh = s.Elapsed, true
	}
	for i, p := range panels {
		for j, sd := range p.series {
			v, ok := sd.get(&s)
			// A value that is not a number (NaN, ±Inf) was not measured:
			// a gap and "—", not a scale stretched to infinity.
			ok = ok && !math.IsNaN(v) && !math.IsInf(v, 0)
			m.series[i][j].push(point{t: s.Elapsed, v: v, ok: ok})
		}
	}
}

// quit asks the lab to stop (children stopped cleanly) on a command
// goroutine, bounded by the stop timeout, then quits.
func (m *Model) quit() tea.Cmd {
	m.stopping = true
	m.hurry.interrupt()
	m.panelOpen, m.pick.open = false, false
	m.setStatus("stopping… (stopping load, reverting faults, stopping children)", false)
	ctrl, d := m.ctrl, m.stopTimeout
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(context.Background(), d)
		defer cancel()
		return stoppedMsg{err: ctrl.Stop(ctx)}
	}
}
