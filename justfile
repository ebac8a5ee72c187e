# agentctl recipes. `just` itself comes from the e2e npm install (rust-just) or
# your package manager; every recipe is also a plain command you can copy.

default: build

# Build the static binary into ./bin/agentctl. urfave_cli_no_docs leaves out
# the CLI library's man/markdown generator, which agentctl does not use and
# whose markdown tables cost every process ~2 ms at start.
build:
    CGO_ENABLED=0 go build -trimpath -tags urfave_cli_no_docs -o bin/agentctl .

# Everything CI runs (unit, CLI transcripts, real-agent end-to-end).
test:
    go test -timeout 45m ./...

# Unit tests and CLI transcripts only (no real agents).
test-short:
    go test -short ./...

# Only the real-agent end-to-end suite; AGENTCTL_E2E=require fails on missing tools.
e2e:
    AGENTCTL_E2E=require go test -timeout 30m -v ./e2e/...

# Every package under the race detector, without the real agents (the discovery
# caches and listings are shared by goroutines; TestEachMatchWhileSaving needs it
# to see a race). A race-built agentctl exits 1 s late, which also shakes out
# tests that lean on timing. About 7 minutes on 2 cores.
race:
    go test -race -short ./...

# gofmt, vet, staticcheck (pinned in go.mod), go.mod tidiness, and the macOS cross-build.
lint:
    test -z "$(gofmt -l .)"
    go vet ./...
    go tool staticcheck ./...
    go mod tidy -diff
    GOOS=darwin CGO_ENABLED=0 go build ./...

# Every Go fuzz target for a while (default 2m each; CI runs 10,000 inputs each).
fuzz time="2m":
    FUZZTIME={{time}} .ci/fuzz

# Go benchmarks plus the whole-process benchmark over a generated home.
bench: build
    go test -run '^$' -bench . -benchmem ./discover/...
    go run ./e2e/bench -runs 10
    go run ./e2e/bench -layout legacy -scale 100,1000 -runs 5

# A cold `list -a` against reading the files once, for this build and for one
# that parses nothing (e2e/bench/zeroparse.patch): the floor parsing sits on.
bench-floor *prefix:
    e2e/bench/zeroparse.sh {{prefix}}

# Regenerate testdata recordings from the real CLIs.
record-fixtures:
    AGENTCTL_E2E=require AGENTCTL_RECORD_DIR={{justfile_directory()}}/testdata/recorded go test -timeout 20m -run TestRecordFixtures -v ./e2e/

# A quick look at the recorded fixture home (recorded on one day, so every
# session of it, not the last 7 days').
demo: build
    AGENTCTL_HOME=$(mktemp -d) ./bin/agentctl --home testdata/home list -a --since 3650d
