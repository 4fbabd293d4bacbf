package load

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// The outcome names are defined here because lab imports load; they must
// stay exactly the ones docs/CONTRACTS.md lists, in its order.
func TestOutcomesMatchContracts(t *testing.T) {
	b, err := os.ReadFile("../../docs/CONTRACTS.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	i := strings.Index(doc, "## Outcomes")
	if i < 0 {
		t.Fatal("CONTRACTS.md has no \"## Outcomes\" section")
	}
	doc = doc[i+3:]
	if j := strings.Index(doc, "\n## "); j >= 0 {
		doc = doc[:j]
	}
	// Rows of the outcomes table: | `name` | … |
	re := regexp.MustCompile("(?m)^\\| `([a-z_]+)` \\| [^|]+\\| (?:`([a-z_]+)`|—) \\|$")
	var names []string
	for _, m := range re.FindAllStringSubmatch(doc, -1) {
		names = append(names, m[1])
		if m[2] != "" && m[2] != m[1] {
			t.Errorf("contracts: outcome %q has header value %q", m[1], m[2])
		}
	}
	if len(names) != len(Outcomes) {
		t.Fatalf("contracts list %d outcomes %v, load has %d %v", len(names), names, len(Outcomes), Outcomes)
	}
	for i := range names {
		if names[i] != Outcomes[i] {
			t.Errorf("outcome %d: contracts %q, load %q", i, names[i], Outcomes[i])
		}
		if outcome(i).String() != Outcomes[i] {
			t.Errorf("outcome index %d names %q, want %q", i, outcome(i), Outcomes[i])
		}
	}
	if int(numOutcomes) != len(Outcomes) {
		t.Errorf("numOutcomes = %d, len(Outcomes) = %d", numOutcomes, len(Outcomes))
	}
}
