package upstream

import "testing"

func TestLeastOutstanding(t *testing.T) {
	tests := []struct {
		name  string
		loads []int64
		want  []int // acceptable picks
	}{
		{"empty", nil, []int{-1}},
		{"single", []int64{9}, []int{0}},
		{"idle first", []int64{0, 3, 5}, []int{0}},
		{"idle last", []int64{4, 3, 0}, []int{2}},
		{"idle middle", []int64{2, 1, 2}, []int{1}},
		{"tie", []int64{1, 4, 1}, []int{0, 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var lo LeastOutstanding
			for range 10 { // every rotation of the tie-break start
				got := lo.Pick(tt.loads)
				okPick := false
				for _, w := range tt.want {
					okPick = okPick || got == w
				}
				if !okPick {
					t.Fatalf("Pick(%v) = %d, want one of %v", tt.loads, got, tt.want)
				}
			}
		})
	}
}

func TestLeastOutstandingSpreadsTies(t *testing.T) {
	var lo LeastOutstanding
	seen := map[int]int{}
	for range 30 {
		seen[lo.Pick([]int64{0, 0, 0})]++
	}
	if seen[0] != 10 || seen[1] != 10 || seen[2] != 10 {
		t.Fatalf("ties not spread round-robin: %v", seen)
	}
}

func TestBalancerFunc(t *testing.T) {
	var b Balancer = BalancerFunc(func(l []int64) int { return len(l) - 1 })
	if got := b.Pick([]int64{0, 0, 7}); got != 2 {
		t.Fatalf("BalancerFunc.Pick = %d", got)
	}
}
