#!/usr/bin/env bash
# Rebuild the ALFWorld runs in testdata/traces from the zjunlp/KnowAgent snapshot.
# Needs the snapshot under /work/.mirror (search tool: fetch github:zjunlp/KnowAgent).
# The runs are listed in runs.tsv (set, 0-based line, game name, output file).
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
TRACES="$(cd "$HERE/../.." && pwd)"
GIT="${KNOWAGENT_GIT:-/work/.mirror/zjunlp+KnowAgent/repo}"
COMMIT=82bc535f1ef2426ec883a548cb38961f9d1720ee
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
for set in D0 D1; do
  git --git-dir="$GIT" show "$COMMIT:Self-Learning/trajs/datas/KnowAgentALFWorld_llama-2-13b_$set.jsonl" > "$TMP/$set.jsonl"
done
grep -v '^#' "$HERE/runs.tsv" | while IFS=$'\t' read -r set line game file; do
  python3 "$HERE/knowagent_trajs.py" "$line" "$game" < "$TMP/$set.jsonl" > "$TRACES/$file"
  echo "$file"
done
