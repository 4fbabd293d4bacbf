package fakemodel

import (
	"bytes"
	"slices"
	"strings"
)

// job is one parsed request, ready to be served.
type job struct {
	stream bool
	// predict answers {"decision","score"}; legacy a text completion
	// (/v1/completions); embed embeddings; otherwise a chat completion.
	predict, legacy, embed    bool
	model                     string
	promptTokens, complTokens int
	// seqs is the sequences the job generates (a chat's n; a text
	// completion's prompts × best_of), choices those it returns (n;
	// prompts × n). 0 counts as 1.
	seqs, choices int
	finish        string // finish_reason of a chat or text answer
	// cut is the bytes of every choice's text when a stop sequence ended
	// it (stopped): the text of the complTokens tokens up to where the
	// sequence begins.
	stopped      bool
	cut          int
	includeUsage bool // a stream ends with a usage chunk
	// inputs, dims and base64 shape an embeddings answer.
	inputs, dims int
	base64       bool
}

// generated is the completion tokens the job makes: complTokens for each
// sequence.
func (j job) generated() int { return j.complTokens * max(j.seqs, 1) }

// numChoices is the choices the answer carries, at least 1.
func (j job) numChoices() int { return max(j.choices, 1) }

// answerText is every choice's text: the first complTokens fake words,
// up to the stop sequence that ended them.
func (j job) answerText() string {
	var sb strings.Builder
	for i := range j.complTokens {
		sb.WriteString(word(i))
	}
	if j.stopped {
		return sb.String()[:j.cut]
	}
	return sb.String()
}

// tokenText is the text of token i, which begins at byte at of the
// answer: word(i), or what of it comes before the stop sequence.
func (j job) tokenText(i, at int) string {
	w := word(i)
	if j.stopped {
		return w[:min(len(w), max(0, j.cut-at))]
	}
	return w
}

// withStop applies stop sequences to j's answer (its complTokens and
// finish set): like vLLM, generation ends with the token that completes
// the first stop sequence to appear, the text ends where that sequence
// begins (it is not part of the answer), and finish_reason is "stop".
// The tokens generated, that last one included, are what usage counts
// and what service time is paid for.
func (j job) withStop(stop []string) job {
	if len(stop) == 0 || j.complTokens == 0 {
		return j
	}
	longest := 0
	for _, s := range stop {
		longest = max(longest, len(s))
	}
	// The answer repeats every len(words) tokens, so a sequence that is
	// not within its first period and the sequence's length is nowhere
	// in it: the text searched stays that short however long the answer.
	var text []byte
	var ends []int // ends[i] is the text's length after token i
	for i := 0; i < j.complTokens && len(text) < wordsPeriod+longest; i++ {
		text = append(text, word(i)...)
		ends = append(ends, len(text))
	}
	last, at := -1, 0
	for _, s := range stop {
		k := bytes.Index(text, []byte(s))
		if k < 0 {
			continue
		}
		tok, _ := slices.BinarySearch(ends, k+len(s)) // the token completing it
		if last < 0 || tok < last || tok == last && k < at {
			last, at = tok, k
		}
	}
	if last < 0 {
		return j
	}
	j.complTokens, j.finish, j.stopped, j.cut = last+1, FinishStop, true, at
	return j
}
