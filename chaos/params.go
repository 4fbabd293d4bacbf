package chaos

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/levee-lab/levee/internal/jsonstrict"
)

// decodeParams decodes p, one JSON object, over f's defaults. Beyond
// encoding/json's own checks it refuses what that package lets through:
// a name that matches a parameter only when case is ignored ("NODE"), a
// name given twice (the last would silently win) and anything after the
// object (`{"multiplier":2}}`). A `node` that is neither an index nor a
// list of indexes is a *ParamError on node.
func decodeParams(name string, f Fault, p []byte) error {
	var ne *jsonstrict.NameError
	if err := jsonstrict.Check(p, f); errors.As(err, &ne) {
		return paramErr(name, ne.Path, "%s", ne.Msg)
	}
	dec := json.NewDecoder(bytes.NewReader(p))
	dec.DisallowUnknownFields()
	if err := dec.Decode(f); err != nil {
		var nse *nodeSetError
		if errors.As(err, &nse) {
			return paramErr(name, "node", "%s", nse.msg)
		}
		return fmt.Errorf("chaos: %s: parameters: %w", name, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return fmt.Errorf("chaos: %s: parameters: trailing data after the JSON object", name)
	}
	return nil
}
