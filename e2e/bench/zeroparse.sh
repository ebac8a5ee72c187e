#!/usr/bin/env bash
# zeroparse.sh [HOME_PREFIX] — how close to "read every file once" a cold
# `list -a` could get if parsing cost nothing.
#
# It builds agentctl twice from this working tree: as it is, and with
# zeroparse.patch applied. The patched build still opens, stats and reads every
# file a cold listing reads, splits every line, reads Codex's tails, writes the
# parse index and prints every session; it parses only each file's first line
# (OpenCode: reads each message file and decodes none). Both builds then run the
# bench's cold comparison on the legacy home of 10,000 sessions per agent
# (HOME_PREFIX-legacy-10000, generated when missing) and the ratio lines are
# printed, the patched build's first.
#
# Example: e2e/bench/zeroparse.sh /var/tmp/agentctl-bench-home
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
prefix=${1:-${TMPDIR:-/tmp}/agentctl-bench-home}
runs=${COLD_RUNS:-5}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cd "$root"
mkdir "$work/src"
git ls-files -z | xargs -0 cp --parents -t "$work/src"
git -C "$work/src" apply "$root/e2e/bench/zeroparse.patch" ||
	{ echo "zeroparse.sh: zeroparse.patch no longer applies; update it to the scanners' current lines" >&2; exit 1; }
build() { (cd "$1" && CGO_ENABLED=0 go build -trimpath -tags urfave_cli_no_docs -o "$2" .); }
build "$work/src" "$work/zeroparse"
build "$root" "$work/agentctl"

for bin in zeroparse agentctl; do
	echo "== $bin"
	go run ./e2e/bench -layout legacy -scale 10000 -runs 1 -cold-runs "$runs" -home "$prefix" -bin "$work/$bin" |
		grep -E 'read every file once|index cold|per agent:'
done
