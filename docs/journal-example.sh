#!/usr/bin/env bash
# The README's three-tier example, run for real: 30 Korean/English journal entries (Jan-Apr 2026) go in
# with `zk add`, `zk process` builds notes, weekly episodes and the graph, then L0/L1/L2 are queried.
# Usage: docs/journal-example.sh [OUTPUT_FILE]   (uses a fresh temp ZK_HOME; ~25 min on 2 cores)
# EXAMPLE_HOME=DIR: query a home this script already built (skips `zk add` and `zk process`).
set -euo pipefail
export ZK_HOME="${EXAMPLE_HOME:-$(mktemp -d)}" ZK_NO_WORKER=1 COLUMNS=110
out="${1:-/dev/stdout}"
here="$(cd "$(dirname "$0")/.." && pwd)"
run() { printf '\n$ %s\n' "$*" >>"$out.tmp"; "$@" >>"$out.tmp" 2>/dev/null || true; }
: >"$out.tmp"
if [ -z "${EXAMPLE_HOME:-}" ]; then
  while IFS= read -r line; do
    at="${line:1:16}"; text="${line:19}"
    zk add "$text" --at "${at/ /T}" --json >/dev/null
  done <"$here/bench/data/journal.txt"
  start=$(date +%s)
  # An item the model fails (a reply cut at its token limit) stays pending and makes the exit non-zero.
  zk process --json >"$ZK_HOME/process.json" || echo "zk process: some items failed (see process.json)" >&2
  echo "processed in $(( $(date +%s) - start )) s (home $ZK_HOME)" >&2
fi
run zk stats
run zk context "그거 어떻게 됐어?" --recent "온비서 DB 마이그레이션 말이야"
run zk context "How is my knee doing? Can I run the race?"
run zk context "What's a good pasta recipe?"
run zk search "Onbiseo PostgreSQL" --limit 3
episode=$(zk context "온비서 PostgreSQL 마이그레이션" --json | python3 -c 'import json,sys; h=json.load(sys.stdin)["hints"]; print(h[0]["id"] if h else "")')
[ -n "$episode" ] && run zk expand "${episode:0:9}"
run zk graph 온비서
run zk graph Onbiseo --at 2026-01-20
run zk graph
run zk ask "온비서는 지금 어떤 데이터베이스를 써?"
mv "$out.tmp" "$out"
