package htmlreport

// The page model: everything the page draws, embedded in it as JSON for
// the hover script (and checked by the golden tests).

// page is one report of one or more runs.
type page struct {
	Title    string    `json:"title"`
	Interval float64   `json:"interval_s"` // seconds per plotted point
	XMax     float64   `json:"x_max_s"`    // the shared time axis ends here
	Runs     []runView `json:"runs"`
	Charts   []chart   `json:"charts"`
	Tiles    []tile    `json:"tiles"` // the few figures that tell the story, on top
	Figures  table     `json:"figures"`
	Checks   checks    `json:"thresholds"`
	// Predictions are the numbers typed at the lessons' predict steps
	// beside what the runs measured (none: the panel is left out).
	Predictions []prediction `json:"predictions,omitempty"`
	Notes       []string     `json:"notes,omitempty"` // caveats about the data
	Geom        geom         `json:"geom"`            // the charts' SVG geometry, for the hover script
}

// geom is the SVG geometry every chart shares: the plot starts L units from
// the left and ends R units from the right of the chart's viewBox.
type geom struct {
	L int `json:"l"`
	R int `json:"r"`
}

// runView is one run as the page shows it.
type runView struct {
	Label     string  `json:"label"` // A, B, C…
	Name      string  `json:"name"`
	Title     string  `json:"title,omitempty"`
	Folder    string  `json:"folder"` // base name of the run folder
	Started   string  `json:"started,omitempty"`
	DurationS float64 `json:"duration_s"` // the load's (the summary's); the samples' span without a summary
	Quick     bool    `json:"quick,omitempty"`
	Partial   bool    `json:"partial,omitempty"`
	Ended     string  `json:"ended,omitempty"`
	// Redis is the Redis the gateways shared limits through ("embedded
	// 127.0.0.1:6379", with its failovers); "" without one.
	Redis     string    `json:"redis,omitempty"`
	Pass      *bool     `json:"pass,omitempty"` // nil: no thresholds and no failed fault step
	Dash      string    `json:"dash"`           // SVG stroke-dasharray of its lines ("" solid)
	X         values    `json:"x"`              // time of each plotted point
	Bands     []band    `json:"bands"`          // faults (apply → revert) and gateway outages
	Narration []mark    `json:"narration"`
	OOMKills  []float64 `json:"oom_kills,omitempty"` // times of gateway OOM kills
}

// band is a span of time with a fault applied (or a gateway down).
type band struct {
	Kind   string  `json:"kind"` // "fault" or "down"
	Name   string  `json:"name"` // the fault, or the gateway
	Detail string  `json:"detail,omitempty"`
	From   float64 `json:"from"`
	To     float64 `json:"to"`
	Open   bool    `json:"open,omitempty"` // never reverted: runs to the end
}

// mark is a narration step shown at a time.
type mark struct {
	X    float64 `json:"x"`
	Step int     `json:"step"`
	Kind string  `json:"kind"` // predict, watch, explain
	Text string  `json:"text"`
	// Prediction is a predict step's answer beside its measurement:
	// "predicted 60 % · measured 99.9 %" ("" for other steps).
	Prediction string `json:"prediction,omitempty"`
}

// chart is one panel over the shared time axis.
type chart struct {
	ID    string `json:"id"`
	Title string `json:"title"`
	Unit  string `json:"unit"`
	Note  string `json:"note,omitempty"`
	Tall  bool   `json:"tall,omitempty"`
	// Headline holds big numbers shown with the title (P0 success per run).
	Headline []string `json:"headline,omitempty"`
	YMax     float64  `json:"y_max"`
	Series   []series `json:"series"`
	Lines    []hline  `json:"lines,omitempty"`
	OOM      bool     `json:"oom,omitempty"` // draws the runs' OOM kills
}

// series is one line (or shaded area) of one run.
type series struct {
	Key    string  `json:"key"`
	Name   string  `json:"name"`
	Color  string  `json:"color"`
	Run    int     `json:"run"`
	Width  float64 `json:"width"`
	Area   bool    `json:"area,omitempty"`
	Values values  `json:"values"`
}

// hline is a horizontal line: a run's threshold, a limit or a guard
// watermark.
type hline struct {
	Kind     string  `json:"kind"`            // threshold, limit, watermark
	Level    string  `json:"level,omitempty"` // a watermark's guard level: yellow, red, black
	Label    string  `json:"label"`
	Y        float64 `json:"y"`
	Runs     []int   `json:"runs"`                // the runs it belongs to (one line for equal ones)
	Pass     *bool   `json:"pass,omitempty"`      // thresholds only
	OffScale bool    `json:"off_scale,omitempty"` // above the chart: named at its top
}

// tile is one headline figure of every run (the seed-003 table, drawn):
// A's value, then each other run's, with the last run's trend against A.
type tile struct {
	Label  string   `json:"label"`
	Values []string `json:"values"`
	Trend  string   `json:"trend,omitempty"`
}

// table is the key figures side by side, with each run's difference from
// the first.
type table struct {
	Rows []row `json:"rows"`
	// Note says whose the gateway figures are for runs of several
	// gateways (gatewayNote); "" when every run had one.
	Note string `json:"note,omitempty"`
}

type row struct {
	Label string   `json:"label"`
	Cells []string `json:"cells"`           // one per run
	Diffs []diff   `json:"diffs,omitempty"` // one per run after the first
}

type diff struct {
	Text  string `json:"text"`
	Trend string `json:"trend"` // better, worse, same or "" (neither is better)
}

// checks is every threshold of every run.
type checks struct {
	Rows []checkRow `json:"rows"`
}

type checkRow struct {
	Metric string      `json:"metric"`
	Doc    string      `json:"doc"`
	Cells  []checkCell `json:"cells"` // one per run
}

type checkCell struct {
	Expr  string `json:"expr,omitempty"` // "" when the run has no such threshold
	Value string `json:"value,omitempty"`
	Pass  *bool  `json:"pass,omitempty"`
	Note  string `json:"note,omitempty"`
}
