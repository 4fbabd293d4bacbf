// Package experiment owns the experiment schema: one scenario's traffic,
// topology, faults, narration and thresholds, read from YAML with unknown
// fields rejected and errors naming their line (ParseExperiment), its
// defaults and validation (Normalize), its time scaling (Quick), the
// gateway config it makes (GatewayConfig) and the built-in default lab
// (DefaultExperiment).
package experiment
