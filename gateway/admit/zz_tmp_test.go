package admit

import (
	"fmt"
	"math"
	"os"
	"testing"
)

func TestTmpStartBase(t *testing.T) {
	if os.Getenv("TMPSB") == "" {
		t.Skip()
	}
	for _, sl := range []int{4, 16, 64} {
		var sum, sq float64
		n := 0
		for seed := uint64(1); seed <= 20; seed++ {
			first := true
			debugBase = func(a *adaptive, v, variance float64) {
				if first {
					sum += v
					sq += v * v
					n++
					first = false
				}
			}
			c := simCell{Mean: 0.2, Sigma: envF("SIGMA", 0.25), Nodes: 3, Slots: sl, Offered: 3, Initial: 1, Gateways: 1, Seed: seed, Algo: AlgoGradient}
			runSim(c)
		}
		debugBase = nil
		m := sum / float64(n)
		sig := envF("SIGMA", 0.25)
		fmt.Printf("slots %d: start base mean %.4f sd %.4f (true %.4f)\n", sl, m, math.Sqrt(sq/float64(n)-m*m), 0.2*2*0.5*math.Erfc(sig/math.Sqrt2))
	}
}
