#!/bin/sh
# Rebuild runs/ from bare snapshots (search tool `fetch`): gruckion/mini-swe-agent, SWE-agent/mini-swe-agent, Aider-AI/aider.
# Usage: sh convert/build.sh [MIRROR_DIR]   (default /work/.mirror)
set -e
M=${1:-/work/.mirror}
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-$HERE/../../..}
mkdir -p "$OUT"

# 1. mini-swe-agent v1 (gemini-3-pro-preview), gruckion/mini-swe-agent (MIT)
G=$M/gruckion+mini-swe-agent/repo
C=d12a71affd95403b036b2bdbd827349b77bfffb9
for pair in sympy__sympy-17630:sympy-17630 django__django-11999:django-11999 django__django-10554:django-10554 \
            sympy__sympy-19346:sympy-19346 django__django-13023:django-13023 django__django-14672:django-14672 \
            django__django-14122:django-14122 django__django-11400:django-11400 mwaskom__seaborn-3069:seaborn-3069 \
            django__django-15503:django-15503 django__django-12050:django-12050 sympy__sympy-14531:sympy-14531; do
  id=${pair%%:*}; short=${pair#*:}
  git --git-dir="$G" show "$C:swebench_results/20251118_gemini-3-pro-74pct/trajs/$id/$id.traj.json" \
    | python3 "$HERE/../../coding2/mini_traj.py" > "$OUT/mini-gemini3pro-$short.jsonl" 2>/dev/null
done

# 2. mini-swe-agent v2 tool-call format (deepseek-chat), SWE-agent/mini-swe-agent (MIT), pull-request commit ec0e8e8
G=$M/SWE-agent+mini-swe-agent/repo
C=ec0e8e849fea5b1619deb1753007201000904672
while read name path; do
  git --git-dir="$G" show "$C:$path" | python3 "$HERE/mini_toolcall_traj.py" > "$OUT/$name.jsonl" 2>/dev/null
done <<LIST
mini-dschat-rerun-pydicom-1413 output/deepseek_chat_dev_rerun/pydicom__pydicom-1413/pydicom__pydicom-1413.traj.json
mini-dschat-dev-pydicom-901 output/deepseek_chat_dev/pydicom__pydicom-901/pydicom__pydicom-901.traj.json
mini-dschat-rerun-sqlfluff-1763 output/deepseek_chat_dev_rerun/sqlfluff__sqlfluff-1763/sqlfluff__sqlfluff-1763.traj.json
mini-dschat-django-12286 output/deepseek_chat_test_1-100/django__django-12286/django__django-12286.traj.json
mini-dschat-django-11815 output/deepseek_chat_test_1-100/django__django-11815/django__django-11815.traj.json
mini-dschat-dev-sqlfluff-1763 output/deepseek_chat_dev/sqlfluff__sqlfluff-1763/sqlfluff__sqlfluff-1763.traj.json
mini-dschat-django-15695 output/deepseek_chat_test_1-100/django__django-15695/django__django-15695.traj.json
mini-dschat-django-13033 output/deepseek_chat_test_1-100/django__django-13033/django__django-13033.traj.json
mini-dschat-rerun-pydicom-1694 output/deepseek_chat_dev_rerun/pydicom__pydicom-1694/pydicom__pydicom-1694.traj.json
mini-dschat-rerun-marshmallow-1343 output/deepseek_chat_dev_rerun/marshmallow-code__marshmallow-1343/marshmallow-code__marshmallow-1343.traj.json
mini-dschat-rerun-pvlib-1854 output/deepseek_chat_dev_rerun/pvlib__pvlib-python-1854/pvlib__pvlib-python-1854.traj.json
mini-dschat-django-12470 output/deepseek_chat_test_1-100/django__django-12470/django__django-12470.traj.json
LIST

# 3. aider chat history (claude-3-5-sonnet), Aider-AI/aider tests/fixtures/chat-history.md (Apache-2.0)
A=$M/Aider-AI+aider/repo
for pair in 32199:aider-claude35-20240810-1021 21304:aider-claude35-20240809-1600 42706:aider-claude35-20240811-0954; do
  line=${pair%%:*}; name=${pair#*:}
  git --git-dir="$A" show 5dc9490bb35f9729ef2c95d00a19ccd30c26339c:tests/fixtures/chat-history.md \
    | python3 "$HERE/../../coding/aider_history.py" --omit-null-error --start "$line" > "$OUT/$name.jsonl" 2>/dev/null
done
