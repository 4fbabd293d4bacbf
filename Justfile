# Conveniences; the README's two commands work without just.

# Start the lab and its live dashboard.
lab *ARGS:
    go run ./cmd/levee lab {{ARGS}}

# Everything CI runs: gofmt, vet, race tests (installs redis-server, tmux and chromium when missing).
test:
    bash scripts/test.sh

# Benchmarks whose figures the README quotes.
bench:
    bash scripts/bench.sh

# Record one lesson headless, e.g. `just run 03 --quick` (a lesson's
# number or name, or an experiment file, as levee run takes them).
run NAME *ARGS:
    go run ./cmd/levee run {{NAME}} {{ARGS}}

# Side-by-side report of recorded runs.
report *DIRS:
    go run ./cmd/levee report {{DIRS}}
