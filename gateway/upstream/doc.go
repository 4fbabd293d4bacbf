// Package upstream is layer 6 of the Levee gateway: the pool of model nodes.
//
// A [Pool] answers each [Call] from the node with the fewest outstanding
// requests ([LeastOutstanding]) that is healthy, whose circuit [Breaker]
// admits it and that the outlier detector keeps in rotation. It propagates
// the caller's remaining deadline as X-Levee-Deadline-Ms and refuses to
// call when that cannot cover the node's minimum service time. The
// transport is tuned for many keep-alive connections per node
// ([NewTransport]); active health checks run in [Pool.Run].
//
// Partial failures — a node that hangs on some calls, fails a share of
// them or turns slow — are met by four mechanisms, none sized for any
// particular backend:
//
//   - Attempt timeouts: each node's time to first byte is kept per call
//     class over a rolling window; an attempt is abandoned (its request
//     cancelled, so the node sees the disconnect) after Multiplier × a high
//     quantile of it, cut so a retry still fits the caller's deadline
//     ([AttemptTimeoutConfig]).
//   - Retries of connection failures, 5xx and abandoned attempts, on
//     another node, within a token [RetryBudget] whose share P0Reserve only
//     P0 may spend.
//   - Hedges for P0 (optionally P1, never P2): a call with no first byte
//     after its node's latency quantile gets one second attempt elsewhere;
//     the first good answer wins, the other is cancelled; hedges have their
//     own budget ([HedgeConfig]).
//   - Outlier ejection beside the breaker: consecutive failures, a failure
//     share or a median latency far from the peers' take a node out of
//     rotation for an exponentially growing time, then P1/P2 calls probe it
//     back; at most MaxEjectionPercent of the nodes are out
//     ([OutlierConfig]).
package upstream
