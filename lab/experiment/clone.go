package experiment

// Clone returns a deep copy (maps and slices are copied).
func (e *Experiment) Clone() *Experiment {
	c := *e
	c.Articles = append([]string(nil), e.Articles...)
	c.Narration = append([]Step(nil), e.Narration...)
	clonePredicts(c.Narration)
	c.ClientRetry.On = append([]string(nil), e.ClientRetry.On...)
	c.Stages = append([]Stage(nil), e.Stages...)
	c.Faults = make([]FaultStep, len(e.Faults))
	for i, f := range e.Faults {
		f.Params = cloneMap(f.Params)
		c.Faults[i] = f
	}
	c.Mix.Priorities = cloneFloats(e.Mix.Priorities)
	c.Mix.Routes = cloneFloats(e.Mix.Routes)
	c.Mix.RoutesByPriority = cloneRouteTables(e.Mix.RoutesByPriority)
	c.Nodes.Knobs = cloneMap(e.Nodes.Knobs)
	c.Gateway.Limits = cloneMap(e.Gateway.Limits)
	c.Gateway.Guard = cloneMap(e.Gateway.Guard)
	c.Gateway.Config = cloneMap(e.Gateway.Config)
	if e.Gateway.Defenses != nil {
		c.Gateway.Defenses = make(map[string]bool, len(e.Gateway.Defenses))
		for k, v := range e.Gateway.Defenses {
			c.Gateway.Defenses[k] = v
		}
	}
	if e.Thresholds != nil {
		c.Thresholds = make(map[string]string, len(e.Thresholds))
		for k, v := range e.Thresholds {
			c.Thresholds[k] = v
		}
	}
	return &c
}

func cloneFloats(m map[string]float64) map[string]float64 {
	if m == nil {
		return nil
	}
	c := make(map[string]float64, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

// cloneMap deep-copies maps and slices of a decoded YAML/JSON value.
func cloneMap(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	c := make(map[string]any, len(m))
	for k, v := range m {
		c[k] = cloneValue(v)
	}
	return c
}

func cloneValue(v any) any {
	switch t := v.(type) {
	case map[string]any:
		return cloneMap(t)
	case []any:
		c := make([]any, len(t))
		for i, x := range t {
			c[i] = cloneValue(x)
		}
		return c
	}
	return v
}

func cloneRouteTables(m map[string]map[string]float64) map[string]map[string]float64 {
	if m == nil {
		return nil
	}
	c := make(map[string]map[string]float64, len(m))
	for k, v := range m {
		c[k] = cloneFloats(v)
	}
	return c
}
