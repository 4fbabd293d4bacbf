package runfiles

// Files of a run folder.
const (
	RunFile     = "run.json"
	SamplesFile = "samples.jsonl"
	EventsFile  = "events.jsonl"
	SummaryFile = "summary.json"
	ReportFile  = "report.txt" // the run alone, as `levee report DIR` prints it
	// HTMLReportFile is the page the HTML report writer (lab/htmlreport)
	// leaves beside the other files.
	HTMLReportFile = "report.html"
	// LogsDir holds each child's log (see runLogFile for their names).
	LogsDir = "logs"
)

// Event kinds in events.jsonl.
const (
	EventRunStart     = "run_start"
	EventRunEnd       = "run_end"
	EventStage        = "stage"
	EventRate         = "rate"
	EventSpike        = "spike"
	EventRamp         = "ramp"
	EventFaultApply   = "fault_apply"
	EventFaultRevert  = "fault_revert"
	EventFaultError   = "fault_error"
	EventDefense      = "defense"
	EventOOMKill      = "oom_kill"
	EventChildStart   = "child_start"
	EventChildExit    = "child_exit"
	EventNarration    = "narration"
	EventRecordStart  = "record_start"
	EventRecordStop   = "record_stop"
	EventError        = "error"
	EventLoadFinished = "load_finished"
	// EventRedisFailover: a killed cluster master's slots are served by a
	// replica (fields killed, by, after_s), or were not (error).
	EventRedisFailover = "redis_failover"
	// EventPrediction is the room's answer at a predict step;
	// EventPredictionMeasured the lab's measurement of the same quantity
	// (see Prediction for their fields).
	EventPrediction         = "prediction"
	EventPredictionMeasured = "prediction_measured"
	// EventLevel is a gateway's overload level change, with the signal,
	// value and threshold that caused it (from its GET /admin/state).
	EventLevel = "level"
)
