#!/usr/bin/env bash
# Re-records the reference runs under experiments/reference/ and redraws
# reference/report.txt. Do it on a quiet machine: the lessons' figures
# depend on it; then update the figures the READMEs quote.
# Usage: scripts/record-references.sh [LESSON…]   (default: every lesson)
# Lessons listed in FULL (space-separated names) run at full length — 01 and
# 03 (the README's A/B picture: in a full-length 01 the gateway reaches its
# pod limit and is OOM-killed again and again, 9 times in the reference), 07 (--quick puts its
# node kill inside the start-up transient), 04 (--quick puts its kill
# before the probes have corrected the start-up's baseline: 7 of 12 quick
# runs settled in time on issue 9's eighth pass; the issue judges it at
# full length), 08 and 08b; the others run with --quick. Set MEASURE_LOCK to run each under flock.
set -euo pipefail
cd "$(dirname "$0")/.."

full=" ${FULL:-01-no-defenses 03-priority-shedding 04-node-loss 07-llm-limit 08-partial-failures 08-partial-failures-off} "
lock=()
[ -n "${MEASURE_LOCK:-}" ] && lock=(flock "$MEASURE_LOCK")
go build -o /tmp/levee-references ./cmd/levee

names=("$@")
if [ ${#names[@]} -eq 0 ]; then
	for f in experiments/[0-9]*.yaml; do names+=("$(basename "$f" .yaml)"); done
fi
failed=()
for n in "${names[@]}"; do
	d=experiments/reference/$n
	args=(--quiet --out "$d")
	[[ $full == *" $n "* ]] || args+=(--quick)
	rm -rf "$d"
	echo "== $n (${args[*]})"
	if ! "${lock[@]}" /tmp/levee-references run "${args[@]}" "experiments/$n.yaml"; then
		failed+=("$n")
	fi
	# logs, configs holding admin tokens, and the HTML page (levee report --html redraws it)
	rm -rf "$d/logs" "$d"/gateway-*.yaml "$d/report.html"
done
dirs=()
for d in experiments/reference/*/; do dirs+=("${d%/}"); done
/tmp/levee-references report "${dirs[@]}" >experiments/reference/report.txt
echo "record-references.sh: report.txt redrawn"
if [ ${#failed[@]} -gt 0 ]; then
	echo "record-references.sh: thresholds failed in: ${failed[*]}" >&2
	exit 1
fi
