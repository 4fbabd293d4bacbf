#!/usr/bin/env bash
# Makes the README's picture: the HTML A/B report of the reference runs of
# lessons 01 and 03, drawn by `levee report --html` and photographed by
# headless Chromium. Usage: scripts/screenshot.sh [RUN_A RUN_B]
# Writes docs/report-ab.html and docs/img/report-ab.png. With RECORD=1 it
# first records both lessons again with scripts/record-references.sh (full
# length; under `flock $MEASURE_LOCK` when that is set): do it on a quiet
# machine, the lessons' figures depend on it, then update the figures the
# READMEs quote.
set -euo pipefail
cd "$(dirname "$0")/.."

a=${1:-experiments/reference/01-no-defenses}
b=${2:-experiments/reference/03-priority-shedding}
html=docs/report-ab.html
png=docs/img/report-ab.png
width=${WIDTH:-1400}
height=${HEIGHT:-1690}

chromium=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$chromium" ]; then
	echo "screenshot.sh: chromium not found (apt-get install chromium)" >&2
	exit 1
fi
if [ "${RECORD:-}" = 1 ]; then
	scripts/record-references.sh "$(basename "$a")" "$(basename "$b")"
fi
for d in "$a" "$b"; do
	if [ ! -f "$d/samples.jsonl" ]; then
		echo "screenshot.sh: $d has no samples.jsonl; record it: RECORD=1 scripts/screenshot.sh" >&2
		exit 1
	fi
done

mkdir -p "$(dirname "$png")"
go run ./cmd/levee report --html "$html" "$a" "$b" >/dev/null
profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
"$chromium" --headless --no-sandbox --disable-gpu --no-first-run \
	--disable-background-networking --disable-component-update --disable-sync \
	--user-data-dir="$profile" --hide-scrollbars --force-device-scale-factor=1 \
	--window-size="$width,$height" --virtual-time-budget=3000 \
	--screenshot="$png" "file://$PWD/$html" 2>/dev/null
echo "screenshot.sh: wrote $html and $png"
