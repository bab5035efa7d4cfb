#!/bin/sh
# Rebuild the mini-swe-agent runs of the corpus2 batch from a bare snapshot of gruckion/mini-swe-agent (MIT).
set -e
G=${1:-/work/.mirror/gruckion+mini-swe-agent/repo}
C=d12a71affd95403b036b2bdbd827349b77bfffb9
HERE=$(dirname "$0")
OUT=${OUT:-$HERE/../..}
for id in django__django-11138 django__django-15280 django__django-13297; do
  git --git-dir="$G" show "$C:swebench_results/20251118_gemini-3-pro-74pct/trajs/$id/$id.traj.json" \
    | python3 "$HERE/mini_traj.py" > "$OUT/mini-gemini3pro-${id#django__}.jsonl" 2>/dev/null
done
