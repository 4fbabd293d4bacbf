#!/usr/bin/env bash
# The one test command (README, Justfile and .ci/run all call it): installs
# what the tests need when missing, then gofmt, go vet and the race tests.
set -euo pipefail
cd "$(dirname "$0")/.."

# Tests that need redis-server or tmux fail rather than skip when CI is
# set and the tool is missing (internal/redistest, cmd/levee's tmux tests).
need=()
command -v redis-server >/dev/null 2>&1 || need+=(redis-server)
command -v tmux >/dev/null 2>&1 || need+=(tmux)
# The HTML report's browser tests (lab/htmlreport) open pages in headless
# Chromium; with CI set they fail rather than skip when it is missing.
command -v chromium >/dev/null 2>&1 || need+=(chromium)
if ((${#need[@]})); then
	echo "test.sh: installing ${need[*]} (apt-get)"
	sudo=""
	[ "$(id -u)" -eq 0 ] || sudo="sudo"
	$sudo apt-get update -qq
	$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi

unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$unformatted" ]; then
	echo "test.sh: gofmt needed on:" >&2
	echo "$unformatted" >&2
	exit 1
fi

go vet ./...
# The lab is Linux-only, but the binary must keep building for macOS (its
# non-lab commands; the lab there refuses to start, saying why).
GOOS=darwin GOARCH=arm64 go build -o /dev/null ./cmd/levee
go test -race -count=1 -timeout 25m "$@" ./...
