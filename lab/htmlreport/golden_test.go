package htmlreport

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// TestGoldenPageData pins the data the page embeds (and draws) for an A/B
// of two synthetic runs: intervals, merged percentiles, rates, bands,
// narration, lines and both tables. Refresh with `go test -update` after a
// deliberate change, and read the diff.
func TestGoldenPageData(t *testing.T) {
	dir := t.TempDir()
	a := synth{name: "collapse", samples: 80, seed: 1}.write(t, dir)
	b := synth{name: "protected", samples: 80, seed: 2, protected: true}.write(t, dir)
	pg, err := build(loadAll(t, a, b))
	if err != nil {
		t.Fatal(err)
	}
	got, err := json.MarshalIndent(pg, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	golden := filepath.Join("testdata", "ab.golden.json")
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("page data differs from %s; rerun with -update if the change is meant", golden)
		gl, wl := bytes.Split(got, []byte("\n")), bytes.Split(want, []byte("\n"))
		for i := 0; i < len(gl) && i < len(wl); i++ {
			if !bytes.Equal(gl[i], wl[i]) {
				t.Errorf("first difference at line %d:\n got: %s\nwant: %s", i+1, gl[i], wl[i])
				break
			}
		}
	}

	// The page embeds exactly this data.
	var buf bytes.Buffer
	if err := render(&buf, pg); err != nil {
		t.Fatal(err)
	}
	m := bytes.Split(buf.Bytes(), []byte(`<script type="application/json" id="levee-data">`))
	if len(m) != 2 {
		t.Fatal("the page has no embedded data")
	}
	embedded := m[1][:bytes.Index(m[1], []byte("</script>"))]
	var back page
	if err := json.Unmarshal(embedded, &back); err != nil {
		t.Fatalf("embedded data: %v", err)
	}
	again, _ := json.MarshalIndent(&back, "", " ")
	if !bytes.Equal(append(again, '\n'), got) {
		t.Error("the embedded data does not read back as the page model")
	}
}
