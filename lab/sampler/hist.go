package sampler

import (
	"sync"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/levee-lab/levee/internal/hdrv2"
)

// encoders keep their zlib state between ticks; a pool keeps Next free of
// shared mutable state.
var encoders = sync.Pool{New: func() any { return new(hdrv2.Encoder) }}

// encodeHist is Sample.AdmittedHist's encoding of h: HdrHistogram's V2
// compressed form, "" for nil. A histogram that cannot be encoded is left
// out rather than invented.
func encodeHist(h *hdrhistogram.PackedHistogram) string {
	e := encoders.Get().(*hdrv2.Encoder)
	defer encoders.Put(e)
	s, err := e.Encode(h)
	if err != nil {
		return ""
	}
	return s
}
