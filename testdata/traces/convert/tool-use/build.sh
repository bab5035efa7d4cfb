#!/bin/sh
# Rebuild these runs in testdata/traces (or $OUT) from the fetched snapshots (bare git mirrors under /work/.mirror).
# Each line: source commit and path | converter > "$OUT"/FILE. See manifest.json for the labels.
set -e
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-$HERE/../..} # testdata/traces
TAU=/work/.mirror/sierra-research+tau-bench/repo
TAU2=/work/.mirror/sierra-research+tau2-bench/repo
TB=/work/.mirror/OpenBMB+ToolBench/repo

# tau-bench historical trajectories (gpt-4o, airline)
H="59a200c6d575d595120f1cb70fea53cef0632f6b:historical_trajectories/gpt-4o-airline.json"
for tt in 9:2 13:0 13:2 3:0 23:3 20:1 17:3; do
  t=${tt%:*}; r=${tt#*:}
  git -C $TAU show "$H" | python3 "$HERE"/taubench_hist.py $t $r > "$OUT"/taubench-airline-gpt4o-t$(printf %02d $t)-r$r.jsonl
done

# tau2-bench results files: name commit path index
tau2() {
  git -C $TAU2 show "$2:$3" | python3 "$HERE"/tau2_results.py $4 > "$OUT"/$1.jsonl
}
Q=src/experiments/eval/data/qwen2.5-7b-retries/ollama_chat/qwen2.5:7b_airline_default_gpt-4.1-2025-04-14_1trials.json
QC=3a8b3437f40f519ae7204ffe0b8bd5192ffe2fad
tau2 tau2-airline-qwen25-7b-task38 $QC $Q 48
tau2 tau2-airline-qwen25-7b-task40 $QC $Q 43
tau2 tau2-airline-qwen25-7b-task27 $QC $Q 22
tau2 tau2-airline-qwen25-7b-task20 $QC $Q 23
tau2 tau2-airline-qwen25-7b-task4 $QC $Q 10
W=results/whissle/airline_run1.json
WC=bbcb86ff2e6414631352a7b808b886691f419e3e
tau2 tau2-airline-whissle-task23 $WC $W 25
tau2 tau2-airline-whissle-task6 $WC $W 6
tau2 tau2-airline-whissle-task21 $WC $W 22
tau2 tau2-airline-whissle-task4 $WC $W 5
O=web/leaderboard/public/submissions/gpt-oss-120b_openai_2025-11-26/trajectories/langchain_agent_airline_2025-11-26_00-37-06.json
OC=52a4ed7b7b19189595e49dd10702cdfcbccdcb56
tau2 tau2-airline-gptoss120b-task28 $OC $O 29
tau2 tau2-airline-gptoss120b-task30 $OC $O 31
tau2 tau2-airline-gptoss120b-task6 $OC $O 8
tau2 tau2-airline-gptoss120b-task9 $OC $O 14
MC=59d0fb96f4292815e1f6463fb2f139ffef47dc7f
M=src/experiments/model_training/results
tau2 tau2-telecom-ftgpt41-sim35 $MC "$M/ft:gpt-4.1-2025-04-14:sierra:tau2-full-sft:BzrYdMNm_telecom_default_gpt-4.1_1trials.json" 35
tau2 tau2-telecom-nouser-gpt41-sim13 $MC "$M/gpt-4.1_telecom_no-user_gpt-4.1_1trials.json" 13
tau2 tau2-telecom-nouser-gpt41-sim38 $MC "$M/gpt-4.1_telecom_no-user_gpt-4.1_1trials.json" 38
tau2 tau2-telecom-gpt41-sim8 $MC "$M/gpt-4.1_telecom_default_gpt-4.1_1trials.json" 8
tau2 tau2-retail-gpt41-task62 $MC "$M/gpt-4.1_retail_defautl_gpt-4.1_1trials.json" 26
tau2 tau2-airline-gpt41-task32 $MC "$M/gpt-4.1_airline_default_gpt-4.1_1trials.json" 15
tau2 tau2-telecom-gpt4o-sim12 8d9b507622399539925847638ebeb0c4cc5f3b56 "data/simulations/2025-08-10T02:44:06.496849_telecom_llm_agent_gpt-4o_user_simulator_gpt-4o.json" 12

# ToolBench DFSDT answers (ChatGPT)
TC=d56fdd89faf8c91fa135090b212bb9057ee5cfc2
for g in G1:57 G1:59 G1:69 G2:10 G2:52 G2:119 G3:3 G3:8 G3:15; do
  grp=${g%:*}; n=${g#*:}
  git -C $TB show "$TC:data_example/answer/${grp}_answer/${n}_ChatGPT_DFS_woFilter_w2.json" \
    | python3 "$HERE"/toolbench_dfsdt.py > "$OUT"/toolbench-dfsdt-$grp-$n.jsonl
done
