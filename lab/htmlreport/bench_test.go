package htmlreport

import (
	"os"
	"path/filepath"
	"runtime/debug"
	"syscall"
	"testing"
	"time"
)

// BenchmarkWriteFile30Min builds the report of a synthetic 30-minute run
// (7,200 samples of 250 ms, with per-tick histograms, faults, narration and
// an OOM kill) from its folder, as `levee report --html` does: reading and
// decoding the files included. It reports the page's size; the target is
// under 2 MB and 2 s. It also reports the CPU time per report (getrusage),
// which a busy machine disturbs less than the wall time.
func BenchmarkWriteFile30Min(b *testing.B) {
	dir := b.TempDir()
	run := synth{name: "thirty-minutes", samples: 7200, seed: 1}.write(b, dir)
	out := filepath.Join(dir, "report.html")
	debug.FreeOSMemory() // the synthetic run's garbage is not the report's
	b.ReportAllocs()
	cpu0 := cpuTime()
	n := 0
	for b.Loop() {
		if err := WriteFile(out, run); err != nil {
			b.Fatal(err)
		}
		n++
	}
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(n)/1e6, "cpu-ms/op")
	st, err := os.Stat(out)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(st.Size())/1e6, "MB/report")
	samples, _ := os.Stat(filepath.Join(run, "samples.jsonl"))
	b.ReportMetric(float64(samples.Size())/1e6, "MB/samples")
}

// cpuTime is this process's user and system time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
