package tui

import tea "github.com/charmbracelet/bubbletea"

// toggleRecording starts or stops a recording. Both write files, so they
// run as a command, off the UI goroutine; recordingDone shows the result.
func (m *Model) toggleRecording() tea.Cmd {
	if m.recBusy {
		m.setStatus("recording: still busy with the last r", false)
		return nil
	}
	m.recBusy = true
	ctrl := m.ctrl
	if m.ctrl.Recording() {
		m.setStatus("stopping the recording (summary, logs, report)…", false)
		return func() tea.Msg { return recordingMsg{err: ctrl.StopRecording()} }
	}
	m.setStatus("starting a recording…", false)
	return func() tea.Msg {
		dir, err := ctrl.StartRecording()
		return recordingMsg{start: true, dir: dir, err: err}
	}
}

// recordingDone shows what a recording command did.
func (m *Model) recordingDone(r recordingMsg) {
	m.recBusy = false
	switch {
	case r.start && r.err != nil:
		m.setStatus("start recording: "+r.err.Error(), true)
	case r.start:
		m.recDir = r.dir
		m.setStatus("recording to "+r.dir, false)
	case r.err != nil:
		m.setStatus("stop recording: "+r.err.Error(), true)
	default:
		m.setStatus("recording stopped: "+m.recDir, false)
	}
	rec := m.ctrl.Recording()
	if rec && !m.recording {
		m.recStart = m.last.Elapsed
	}
	m.recording = rec
}
