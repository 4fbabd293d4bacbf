package chaos

import (
	"context"
	"time"
)

// Env is what faults act on. The lab implements it over its child processes
// and admin APIs. Node indexes are 0-based; node -1 means every node.
type Env interface {
	// NodeCount is the number of fake model nodes.
	NodeCount() int
	// PatchNodeKnobs sends a partial knob object (see docs/CONTRACTS.md) to
	// the admin API of node i (or all with -1) and returns the knobs that were
	// in force before, so a fault can restore them.
	PatchNodeKnobs(ctx context.Context, node int, patch map[string]any) (before map[string]any, err error)
	// KillNode SIGKILLs node i's process; RestartNode starts it again on the
	// same port and waits until it is ready.
	KillNode(ctx context.Context, node int) error
	RestartNode(ctx context.Context, node int) error
	// PatchGatewayPressure sends {churn_mb_per_s, ballast_mb, cpu_hog_goroutines,
	// cpu_hog_duty} to every gateway's PUT /admin/pressure.
	PatchGatewayPressure(ctx context.Context, patch map[string]any) error
	// SetRateFactor multiplies the generator's target rate (1 = normal).
	SetRateFactor(f float64)
	// SetSlowClients makes a share (0..1) of stream/export readers read at
	// kbps KB/s; share 0 turns it off.
	SetSlowClients(share float64, kbps float64)
	// KillRedis / RestartRedis stop and bring back the lab's Redis child.
	// They return an error when the lab has no Redis.
	KillRedis(ctx context.Context) error
	RestartRedis(ctx context.Context) error
	// After runs f after d unless the env is stopped first (for faults with
	// a duration, such as node_kill's restart).
	After(d time.Duration, f func())
}
