#!/bin/sh
# Rebuild runs/ from the bare snapshots fetched with the search tool's fetch (see NOTES.md).
set -e
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-$HERE/../../..}
mkdir -p "$OUT"
TAU=/work/.mirror/sierra-research+tau-bench/repo
TAU2=/work/.mirror/sierra-research+tau2-bench/repo

# tau-bench historical trajectories (gpt-4o, airline): task:trial
H="59a200c6d575d595120f1cb70fea53cef0632f6b:historical_trajectories/gpt-4o-airline.json"
for tt in 8:3 3:1 12:2 22:1 19:2 6:0 37:3 26:0 9:0 6:2 43:2 37:1 29:3 30:3 47:0; do
  t=${tt%:*}; r=${tt#*:}
  git -C $TAU show "$H" | python3 "$HERE"/../../tool-use/taubench_hist.py $t $r > "$OUT"/taubench-gpt4o-airline-t$(printf %02d $t)-r$r.jsonl
done

# tau2-bench results files: name commit path simulation-index
tau2() {
  git -C $TAU2 show "$2:$3" | python3 "$HERE"/../../tool-use/tau2_results.py $4 > "$OUT"/$1.jsonl
}
tau2 tau2-gpt54-airline-ironshell-s44 17044a0b19619b426f63a8dbbd008f7d4c0b32ba 'web/leaderboard/public/submissions/ironshell-ironforge_ironshell-ui_2026-03-09/trajectories/ironshell_airline_gpt54_run1.json' 44
tau2 tau2-gptoss120b-airline-langchain-s33 52a4ed7b7b19189595e49dd10702cdfcbccdcb56 'web/leaderboard/public/submissions/gpt-oss-120b_openai_2025-11-26/trajectories/langchain_agent_airline_2025-11-26_00-37-06.json' 33
tau2 tau2-qwen25-7b-airline-s20 3a8b3437f40f519ae7204ffe0b8bd5192ffe2fad 'src/experiments/eval/data/qwen2.5-7b-retries/ollama_chat/qwen2.5:7b_airline_default_gpt-4.1-2025-04-14_1trials.json' 20
tau2 tau2-opus46-airline-ironshell-s3 17044a0b19619b426f63a8dbbd008f7d4c0b32ba 'web/leaderboard/public/submissions/ironshell-ironforge_ironshell-ui_2026-03-09/trajectories/ironshell_airline_opus46_run1.json' 3
tau2 tau2-gpt41-telecom-nouser-s24 59d0fb96f4292815e1f6463fb2f139ffef47dc7f 'src/experiments/model_training/results/gpt-4.1_telecom_no-user_gpt-4.1_1trials.json' 24
tau2 tau2-ftgpt41-telecom-nouser-s39 59d0fb96f4292815e1f6463fb2f139ffef47dc7f 'src/experiments/model_training/results/ft:gpt-4.1-2025-04-14:sierra:tau2-full-sft:BzrYdMNm_telecom_no-user_gpt-4.1_1trials.json' 39
tau2 tau2-qwen25-7b-airline-s49 3a8b3437f40f519ae7204ffe0b8bd5192ffe2fad 'src/experiments/eval/data/qwen2.5-7b-retries/ollama_chat/qwen2.5:7b_airline_default_gpt-4.1-2025-04-14_1trials.json' 49
tau2 tau2-opus46-airline-distyl-s1 dfdc3f7bf914cebb203339e3d03fcccf4de22437 'web/leaderboard/public/submissions/button-claude-opus-4-6_distyl-ai_2026-03-04/trajectories/airline.json' 1
tau2 tau2-ftgpt41-telecom-nouser-s0 59d0fb96f4292815e1f6463fb2f139ffef47dc7f 'src/experiments/model_training/results/ft:gpt-4.1-2025-04-14:sierra:tau2-full-sft:BzrYdMNm_telecom_no-user_gpt-4.1_1trials.json' 0
tau2 tau2-opus46-airline-distyl-s6 dfdc3f7bf914cebb203339e3d03fcccf4de22437 'web/leaderboard/public/submissions/button-claude-opus-4-6_distyl-ai_2026-03-04/trajectories/airline.json' 6
tau2 tau2-opus46-airline-adaptive-s0 59b1453eaabb3c95c168709177e61e9ce49b6a9f 'web/leaderboard/public/submissions/adaptive-agent_community_2026-03-23/trajectories/adaptive_agent_airline_opus46_cascata.json' 0
tau2 tau2-opus46-medtriage-adaptive-s38 59b1453eaabb3c95c168709177e61e9ce49b6a9f 'web/leaderboard/public/submissions/adaptive-agent_community_2026-03-23/trajectories/adaptive_agent_medical_triage_opus46_cascata.json' 38
tau2 tau2-whissle-airline-s49 bbcb86ff2e6414631352a7b808b886691f419e3e 'results/whissle/airline_run1.json' 49
tau2 tau2-sonnet45-airline-aide-s37 bfe508e486bce8484fd02e67dfd4bdead3ef5d74 'web/leaderboard/public/submissions/claude-sonnet-4-5_aide-platform_2025-10-31/trajectories/claude-sonnet-4-5_airline_default_gpt4.1_1trials.json' 37
tau2 tau2-gpt41-telecom-s32 59d0fb96f4292815e1f6463fb2f139ffef47dc7f 'src/experiments/model_training/results/gpt-4.1_telecom_default_gpt-4.1_1trials.json' 32
