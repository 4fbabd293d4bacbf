package tui

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/charmbracelet/bubbles/help"
	"github.com/charmbracelet/bubbles/key"
	tea "github.com/charmbracelet/bubbletea"

	"github.com/levee-lab/levee/internal/wire"
	"github.com/levee-lab/levee/lab"
	"github.com/levee-lab/levee/lab/lesson"
	"github.com/levee-lab/levee/lab/load"
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
}

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

func (m *Model) handleKey(msg tea.KeyMsg) (tea.Model, tea.Cmd) {
	k := m.keys
	if m.stopping {
		// A second quit while stopping gives up waiting: with WithKill,
		// the lab is killed at once.
		if key.Matches(msg, k.Quit) {
			if m.hurry.kill != nil {
				m.setStatus("second interrupt: killing every child process…", true)
				m.hurry.interrupt()
			}
			return m, tea.Quit
		}
		return m, nil
	}
	if key.Matches(msg, k.Quit) {
		return m, m.quit()
	}
	if m.switching != "" {
		m.setStatus("starting "+m.switching+"… (q quits)", false)
		return m, nil
	}
	if m.pick.open {
		return m.pickerKey(msg)
	}
	// esc closes the full help, as it closes the panels, before the
	// prompt under it would take it as "skip".
	if m.showHelp && msg.Type == tea.KeyEsc {
		m.showHelp, m.help.ShowAll = false, false
		return m, nil
	}
	if m.prompt.ask != nil && !m.panelOpen && m.promptKey(msg) {
		return m, nil
	}
	if m.panelOpen {
		return m.panelKey(msg)
	}
	switch {
	case key.Matches(msg, k.RateUp), key.Matches(msg, k.RateDown):
		// From 0 (a lesson may start there) ↑ goes to 1 req/s, since ×1.25
		// of 0 is 0; near the lab's maximum it goes to the maximum.
		r := min(max(m.ctrl.Rate()*rateFactor, 1), load.MaxRate)
		if key.Matches(msg, k.RateDown) {
			r = m.ctrl.Rate() / rateFactor
		}
		// The lab refuses a rate out of range, and any once it is finishing
		// (the lesson ended): the status line shows that rather than a
		// change that did not happen.
		m.setRate(r)
	case key.Matches(msg, k.Spike):
		if err := m.ctrl.Spike(spikeFactor, spikeDuration); err != nil {
			m.setStatus("no spike: "+err.Error(), true)
		} else {
			m.setStatus(fmt.Sprintf("spike ×%d for %s", spikeFactor, spikeDuration), false)
		}
	case key.Matches(msg, k.Pause):
		p := !m.ctrl.RampPaused()
		err := m.ctrl.PauseRamp(p)
		m.paused = m.ctrl.RampPaused()
		switch {
		case err != nil:
			m.setStatus("ramp unchanged: "+err.Error(), true)
		case p:
			m.setStatus("ramp paused", false)
		default:
			m.setStatus("ramp resumed", false)
		}
	case key.Matches(msg, k.Fault):
		m.toggleFault(msg.String())
	case key.Matches(msg, k.Defenses):
		m.defenses = m.ctrl.Defenses()
		m.panelOpen, m.showHelp = true, false
		if m.panelSel >= len(m.defenseNames()) {
			m.panelSel = 0
		}
	case key.Matches(msg, k.Record):
		return m, m.toggleRecording()
	case key.Matches(msg, k.Next):
		err := m.ctrl.NextStep()
		m.lesson = m.ctrl.Lesson()
		m.refreshPrompt()
		switch {
		case m.lesson.Steps == 0:
			m.setStatus("no lesson: this run plays no experiment narration", false)
		case err != nil:
			// The lesson ended (the lab is finishing) or its last step
			// shows: the status line says why n moved nothing.
			m.setStatus("no next step: "+err.Error(), true)
		}
	case key.Matches(msg, k.Lessons):
		m.openPicker()
	case (key.Matches(msg, k.Page) || key.Matches(msg, k.PrevPage)) && m.lay.pages <= 1:
		// Nothing to page through: say so rather than ignore the key.
		m.setStatus("tab: every panel already shows on this one page", false)
	case key.Matches(msg, k.Page):
		m.page = (m.page + 1) % m.lay.pages
		m.renderPanels()
	case key.Matches(msg, k.PrevPage):
		m.page = (m.page + m.lay.pages - 1) % m.lay.pages
		m.renderPanels()
	case key.Matches(msg, k.Help):
		m.showHelp = !m.showHelp
		m.help.ShowAll = m.showHelp
	case key.Matches(msg, k.PanelUp, k.PanelDown, k.PanelToggle, k.PanelClose, k.PickStart, k.PromptSave, k.PromptSkip):
		// The full help lists these with the boxes they work in; pressed
		// with none open they would do nothing, silently.
		name := msg.String()
		if name == " " {
			name = "space"
		}
		m.setStatus(name+": nothing here to select, confirm or close (d defenses, l lessons)", false)
	}
	return m, nil
}

func onOff(on bool) string {
	if on {
		return "on"
	}
	return "off"
}

// noteFaultErrors takes the lab's fault list and puts a fault's new
// failure (an apply or revert that failed on the lab's goroutine, after the
// key press returned) on the status line: the row's ⚠ says which fault, the
// status line says why.
func (m *Model) noteFaultErrors(faults []lab.FaultStatus) {
	prev := map[string]string{}
	for _, f := range m.faults {
		prev[f.Name] = f.Error
	}
	for _, f := range faults {
		if f.Error != "" && f.Error != prev[f.Name] {
			m.setStatus(fmt.Sprintf("fault %s: %s", f.Name, f.Error), true)
		}
	}
	m.faults = faults
	// The full help names the keys this catalogue uses ("1-9,0,!").
	m.keys.Fault.SetHelp(faultKeysHelp(len(faults)), faultHelpDesc)
}

func (m *Model) toggleFault(k string) {
	for _, f := range m.faults {
		if f.Key != k {
			continue
		}
		if f.Unavailable != "" {
			m.setStatus(fmt.Sprintf("fault %s is unavailable here: %s", f.Name, f.Unavailable), true)
			return
		}
		if err := m.ctrl.ToggleFault(f.Name); err != nil {
			m.setStatus(fmt.Sprintf("fault %s: %v", f.Name, err), true)
		} else if f.Active {
			m.setStatus("fault "+f.Name+": reverting", false)
		} else {
			m.setStatus("fault "+f.Name+": applying", false)
		}
		m.noteFaultErrors(m.ctrl.Faults())
		return
	}
	m.setStatus("no fault on key "+k, true)
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
