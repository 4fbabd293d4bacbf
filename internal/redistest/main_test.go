package redistest

import "testing"

func TestMain(m *testing.M) { Main(m) }
