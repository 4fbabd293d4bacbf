package htmlreport

import (
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"
)

// BenchmarkWriteFile30Min builds the report of a synthetic 30-minute run
// (7,200 samples of 250 ms, with per-tick histograms, faults, narration and
// an OOM kill) from its folder, as `levee report --html` does: reading and
// decoding the files included. It reports the page's size; the target is
// under 2 MB and 2 s.
func BenchmarkWriteFile30Min(b *testing.B) {
	dir := b.TempDir()
	run := synth{name: "thirty-minutes", samples: 7200, seed: 1}.write(b, dir)
	out := filepath.Join(dir, "report.html")
	debug.FreeOSMemory() // the synthetic run's garbage is not the report's
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if err := WriteFile(out, run); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	st, err := os.Stat(out)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(st.Size())/1e6, "MB/report")
	samples, _ := os.Stat(filepath.Join(run, "samples.jsonl"))
	b.ReportMetric(float64(samples.Size())/1e6, "MB/samples")
}
