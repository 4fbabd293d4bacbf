// Package upstream is layer 6 of the Levee gateway: the pool of model nodes.
//
// A [Pool] sends each call to the healthy node with the fewest outstanding
// requests ([LeastOutstanding]) whose circuit [Breaker] admits it, propagates
// the caller's remaining deadline as X-Levee-Deadline-Ms and refuses to call
// when that cannot cover the node's minimum service time, and retries only
// connection-level failures, only on another node, only within a token
// [RetryBudget] (≤ 10 % extra by default). Active health checks run in
// [Pool.Run]. The transport is tuned for many keep-alive connections per
// node ([NewTransport]).
package upstream
