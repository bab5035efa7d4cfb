#!/usr/bin/env bash
# Regenerates these runs in testdata/traces (or $OUT) from the fetched snapshots .
# Each line below is also the rerun recipe for one run.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-$HERE/../..} # testdata/traces
M=/work/.mirror
AIDER="git --git-dir=$M/Aider-AI+aider/repo show 5dc9490bb35f9729ef2c95d00a19ccd30c26339c:tests/fixtures/chat-history.md"
OH="git --git-dir=$M/OpenHands+OpenHands/repo show"
SWE="git --git-dir=$M/SWE-agent+SWE-agent/repo show 3ea751c087f32b16e039a2233dd6eefecef325d5"
MOAT="git --git-dir=$M/aorwall+moatless-tree-search/repo show bc66ea64e3fe96cf3c90f197b4bab9aaa15e1eb9"

# aider: name -> 1-based line of the session header in tests/fixtures/chat-history.md
while read -r name line; do
  $AIDER | python3 "$HERE"/aider_history.py --start "$line" > "$OUT/$name.jsonl" 2>/dev/null
done <<'EOF'
aider-claude35-20240809-1812 26449
aider-claude35-20240807-1324 9930
aider-claude35-20240817-0645 76130
aider-claude35-20240813-1431 63612
aider-claude35-20240806-0855 2706
aider-claude35-20240806-0847 1680
aider-claude35-20240812-2039 50433
aider-claude35-20240813-0536 53614
aider-claude35-20240809-1724 24658
aider-claude35-20240822-0818 99244
aider-gpt4omini-20240809-1736 25886
aider-claude35-20240813-1342 61874
aider-claude35-20240814-0950 66561
aider-claude35-20240810-1442 41127
aider-claude35-20240809-1932 28700
aider-claude35-20240817-0619 75018
EOF

MSWE=3d22520992ea4a65c183376e8568bad6d4dedeec:evaluation/benchmarks/multi_swe_bench/examples/output.jsonl
$OH $MSWE | python3 "$HERE"/openhands_history.py --line 1 > "$OUT"/openhands-llama4-ponyc-4595.jsonl
$OH $MSWE | python3 "$HERE"/openhands_history.py --line 2 > "$OUT"/openhands-llama4-ponyc-4593.jsonl
$OH $MSWE | python3 "$HERE"/openhands_history.py --line 3 > "$OUT"/openhands-llama4-ponyc-4588.jsonl
RES=ca424ec15d3348618da32bb6b974f3e6fa2e9073:tests/unit/resolver/mock_output/output.jsonl
$OH $RES | python3 "$HERE"/openhands_history.py --line 2 > "$OUT"/openhands-resolver-darkmode.jsonl

$SWE:"tests/test_data/trajectories/gpt4__swe-bench-dev-easy_first_only__default__t-0.00__p-0.95__c-3.00__install-1/pydicom__pydicom-1458.traj" \
  | python3 "$HERE"/sweagent_traj.py > "$OUT"/sweagent-gpt4-pydicom-1458.jsonl 2>/dev/null
$SWE:"tests/test_data/trajectories/gpt4__swe-agent-test-repo__default_from_url__t-0.00__p-0.95__c-3.00__install-1/6e44b9__sweagenttestrepo-1c2844.traj" \
  | python3 "$HERE"/sweagent_traj.py > "$OUT"/sweagent-gpt4-testrepo-6e44b9.jsonl 2>/dev/null

$MOAT:tests/benchmark/data/scikit-learn__scikit-learn-13779/trajectory.json \
  | python3 "$HERE"/moatless_trajectory.py > "$OUT"/moatless-sklearn-13779.jsonl 2>/dev/null

# OpenHands (a user's own SWE-bench-style run committed in a copy of OpenHands; MIT outside enterprise/)
git --git-dir=$M/nunu0404+Python_OpenHands/repo show c80bab5aa35f16a396e3d8d2a4e1185d4d8ca42b:output.jsonl \
  | python3 "$HERE"/openhands_history.py --line 1 > "$OUT"/openhands-gpt5-fastjson2-2775.jsonl
# OpenHands agent SDK: one run recorded as LLM completion logs (test fixture)
python3 "$HERE"/openhands_llm_logs.py $M/OpenHands+software-agent-sdk/repo \
  611629e6999ad398dc49c761721eefe18d5e6bd9 tests/fixtures/llm_data/llm-logs > "$OUT"/openhands-sdk-claude4-hello.jsonl

# ChatDev 1.0 WareHouse logs (branch chatdev1.0 of the snapshot, commit 31fd994416a251ecdeb1f0a73c329271743bfb56)
CD="git --git-dir=$M/OpenBMB+ChatDev/repo show 31fd994416a251ecdeb1f0a73c329271743bfb56"
$CD:WareHouse/timer_THUNLP_20230823091709/20230823091709.log | python3 "$HERE"/chatdev_log.py > "$OUT"/chatdev-timer.jsonl
$CD:WareHouse/BackgroundRemoval_THUNLP_20231015220703/BackgroundRemoval_THUNLP_20231015220703.log | python3 "$HERE"/chatdev_log.py > "$OUT"/chatdev-backgroundremoval.jsonl
$CD:WareHouse/Poker1_DefaultOrganization_20231006035628/Poker1_DefaultOrganization_20231006035628.log | python3 "$HERE"/chatdev_log.py > "$OUT"/chatdev-poker1.jsonl
$CD:WareHouse/QRCodeGenerator_THUNLP_20231015214731/QRCodeGenerator_THUNLP_20231015214731.log | python3 "$HERE"/chatdev_log.py > "$OUT"/chatdev-qrcodegenerator.jsonl
