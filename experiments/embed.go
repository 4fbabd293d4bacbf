// Package experiments holds the lesson files (one YAML experiment each) and
// their reference runs. This file only embeds the lesson files into the
// binary, so that `levee lessons` and the lesson picker find them from any
// directory; the code that reads them lives in lab/lesson.
package experiments

import "embed"

// FS holds every lesson file (*.yaml) of this folder, at its root.
//
//go:embed *.yaml
var FS embed.FS
