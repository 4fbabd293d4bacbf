// Package chaos owns the fault catalogue and the fault timeline: each
// fault's name, JSON-tagged parameters, Apply and Revert, and its effect on
// capacity (Registry, Fault, Effect); a Controller that applies and reverts
// them by name; and the one Timeline that schedules them (Play on the
// caller's clock, Run on a clock of its own). Faults act on the lab through
// Env, which the lab implements; chaos never imports lab and never draws
// anything.
package chaos
