package chaos

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"reflect"
	"slices"

	"github.com/levee-lab/levee/internal/jsonstrict"
)

// decodeParams decodes p, one JSON object, over f's defaults. Beyond
// encoding/json's own checks it refuses what that package lets through:
// a name that matches a parameter only when case is ignored ("NODE"), a
// name given twice (the last would silently win) and anything after the
// object (`{"multiplier":2}}`). A value of the wrong type
// (`{"multiplier":"x"}`, `{"for":"soon"}`) is a *ParamError naming its
// parameter, in JSON's words; so is a `node` that is neither an index nor
// a list of indexes.
func decodeParams(name string, f Fault, p []byte) error {
	var ne *jsonstrict.NameError
	if err := jsonstrict.Check(p, f); errors.As(err, &ne) {
		return paramErr(name, ne.Path, "%s", ne.Msg)
	}
	dec := json.NewDecoder(bytes.NewReader(p))
	dec.DisallowUnknownFields()
	if err := dec.Decode(f); err != nil {
		var nse *nodeSetError
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &nse):
			return paramErr(name, "node", "%s", nse.msg)
		case errors.As(err, &te) && te.Field != "":
			return paramErr(name, te.Field, "%s", jsonstrict.TypeMessage(te))
		}
		if field := failingParam(f, p); field != "" {
			// A type's own decoder (Duration's) says what is wrong
			// but not where.
			return paramErr(name, field, "%v", err)
		}
		return fmt.Errorf("chaos: %s: parameters: %w", name, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return fmt.Errorf("chaos: %s: parameters: trailing data after the JSON object", name)
	}
	return nil
}

// failingParam returns the parameter of p, a JSON object, that does not
// decode into a fresh f on its own ("" when each does, or p is no
// object). It runs only after p failed to decode, to name the parameter.
func failingParam(f Fault, p []byte) string {
	var obj map[string]json.RawMessage
	if json.Unmarshal(p, &obj) != nil {
		return ""
	}
	t := reflect.TypeOf(f)
	if t.Kind() != reflect.Pointer {
		return ""
	}
	for _, k := range slices.Sorted(maps.Keys(obj)) {
		one, err := json.Marshal(map[string]json.RawMessage{k: obj[k]})
		if err != nil {
			continue
		}
		if json.Unmarshal(one, reflect.New(t.Elem()).Interface()) != nil {
			return k
		}
	}
	return ""
}
