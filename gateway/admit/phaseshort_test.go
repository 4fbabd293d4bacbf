package admit

import (
	"fmt"
	"os"
	"testing"
)

// TestPhaseShort is a diagnostic, not a check (skipped unless PHASESHORT
// is set; SEED picks the matrix's seed): for every matrix cell it prints
// the goodput ratio to the static semaphore and the shortfall of ok
// requests against it in each phase (start, change, return) as a share
// of the static semaphore's whole run — where the ratio's loss comes
// from. It shares runSim's debug hook, so it plays cells one at a time.
func TestPhaseShort(t *testing.T) {
	if os.Getenv("PHASESHORT") == "" {
		t.Skip()
	}
	seed := uint64(envF("SEED", 1))
	for _, c := range matrixCells(seed) {
		r, rs, ad, ss, err := runPair(c)
		if err != nil {
			t.Fatal(err)
		}
		per := func(s *sim) []int {
			n := make([]int, len(s.phaseEnd))
			for _, at := range s.okAt {
				k := 0
				for k < len(s.phaseEnd)-1 && at >= s.phaseEnd[k] {
					k++
				}
				n[k]++
			}
			return n
		}
		a, b := per(ad), per(ss)
		fmt.Printf("PS %s | total %.4f |", c, float64(r.Goodput)/float64(rs.Goodput))
		for k := range a {
			fmt.Printf(" %.4f", float64(b[k]-a[k])/float64(rs.Goodput))
		}
		fmt.Println()
	}
}
