// Package supervisor owns the lab's child processes: it starts the model
// nodes, the gateways and the Redis child as real processes on loopback
// (each re-executing the levee binary, each announcing its ports with a
// ready line), ties them to the lab's life (StartProcess), restarts a
// gateway that dies, OOM-kills one at its pod memory limit, kills and
// restarts nodes, and talks to every child's admin API.
package supervisor
