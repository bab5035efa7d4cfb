#!/bin/sh
# Rebuild runs/ from a bare snapshot of xingyaoww/mint-bench (Apache-2.0), commit C.
# Usage: sh convert/build.sh [/path/to/mint-bench.git]   (from anywhere; OUT=DIR writes elsewhere)
set -e
G=${1:-/work/.mirror/xingyaoww+mint-bench/repo}
C=3f7f12c10bf763be1e6dbdeb42feb57624121f61
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-$HERE/../../..}
ST=${ST:-${TMPDIR:-/tmp}/mint-state}
mkdir -p "$OUT" "$ST"
run() { # out-name path task-id
  python3 "$HERE/../../shortcap/mint_results.py" --git "$G" --commit $C --path "$2" --task-id "$3" > "$OUT/$1.jsonl" 2>"$ST/$1.json"
}
D=data/outputs
run mint-gpt-35-turbo-16k-0613-gsm8k-43 "$D/gpt-3.5-turbo-16k-0613/F=None/max5_p2+tool+cd/reasoning/gsm8k/results.jsonl" 43
run mint-codellama-13b-instruct-hf-fbgpt4-mmlu-59 "$D/CodeLlama-13b-Instruct-hf/F=gpt-4-0613/PHF=no_GT-textual/max5_p2+tool+cd/reasoning/mmlu/results.jsonl" 59
run mint-mammoth-7b-mistral-hotpotqa-9 "$D/MAmmoTH-7B-Mistral/F=None/max5_p2+tool+cd/reasoning/hotpotqa/results.jsonl" 9
run mint-mistral-7b-instruct-v02-humaneval-38 "$D/Mistral-7B-Instruct-v0.2/F=None/max5_p2+tool+cd/code_generation/humaneval/results.jsonl" 38
run mint-llama-2-70b-chat-hf-math-28 "$D/Llama-2-70b-chat-hf/F=None/max5_p2+tool+cd/reasoning/math/results.jsonl" 28
run mint-codellama-7b-hf-fbgpt4-alfworld-coolbreadcountertop "$D/CodeLlama-7b-hf/F=gpt-4-0613/PHF=no_GT-textual/max5_p2+tool+cd/decision_making/alfworld/results.jsonl" pick_cool_then_place_in_recep-Bread-None-CounterTop-10/trial_T20190908_091835_825830
run mint-codellama-7b-instruct-hf-gsm8k-46 "$D/CodeLlama-7b-Instruct-hf/F=None/max5_p2+tool+cd/reasoning/gsm8k/results.jsonl" 46
run mint-agentlm-13b-llama-2-math-21 "$D/agentlm-13b-llama-2/F=None/max5_p2+tool+cd/reasoning/math/results.jsonl" 21
run mint-codellama-7b-instruct-hf-fbgpt4-gsm8k-36 "$D/CodeLlama-7b-Instruct-hf/F=gpt-4-0613/PHF=no_GT-textual/max5_p2+tool+cd/reasoning/gsm8k/results.jsonl" 36
run mint-qwen15-72b-chat-hotpotqa-23 "$D/Qwen1.5-72B-Chat/F=None/max5_p2+tool+cd/reasoning/hotpotqa/results.jsonl" 23
run mint-vicuna-13b-v15-fbgpt4-alfworld-cleanclothcountertop "$D/vicuna-13b-v1.5/F=gpt-4-0613/PHF=no_GT-textual/max5_p2+tool+cd/decision_making/alfworld/results.jsonl" pick_clean_then_place_in_recep-Cloth-None-CounterTop-424/trial_T20190908_114340_674467
run mint-lemur-70b-v1-hotpotqa-14 "$D/lemur-70b-v1/F=None/max5_p2+tool+cd/reasoning/hotpotqa/results.jsonl" 14
run mint-deepseek-coder-33b-instruct-alfworld-lookcddesklamp "$D/deepseek-coder-33b-instruct/F=None/max5_p2+tool+cd/decision_making/alfworld/results.jsonl" look_at_obj_in_light-CD-None-DeskLamp-308/trial_T20190908_141958_463362
run mint-vicuna-13b-v15-fbgpt4-gsm8k-29 "$D/vicuna-13b-v1.5/F=gpt-4-0613/PHF=no_GT-textual/max5_p2+tool+cd/reasoning/gsm8k/results.jsonl" 29
run mint-claude-2-fbgpt4-alfworld-heatapplefridge "$D/claude-2/F=gpt-4-0613/PHF=no_GT-textual/max5_p2+tool+cd/decision_making/alfworld/results.jsonl" pick_heat_then_place_in_recep-Apple-None-Fridge-10/trial_T20190906_182353_418140
run mint-qwen15-72b-chat-alfworld-putpencilshelf "$D/Qwen1.5-72B-Chat/F=None/max5_p2+tool+cd/decision_making/alfworld/results.jsonl" pick_and_place_simple-Pencil-None-Shelf-308/trial_T20190908_122024_052056
run mint-lemur-70b-chat-v1-mbpp-57 "$D/lemur-70b-chat-v1/F=None/max5_p2+tool+cd/code_generation/mbpp/results.jsonl" 57
run mint-eurus-7b-sft-mbpp-73 "$D/Eurus-7B-SFT/F=None/max5_p2+tool+cd/code_generation/mbpp/results.jsonl" 73
run mint-llama-2-7b-hf-humaneval-34 "$D/Llama-2-7b-hf/F=None/max5_p2+tool+cd/code_generation/humaneval/results.jsonl" 34
run mint-magicoder-s-ds-67b-theoremqa-30 "$D/Magicoder-S-DS-6.7B/F=None/max5_p2+tool+cd/reasoning/theoremqa/results.jsonl" 30
run mint-codellama-34b-instruct-hf-fbgpt4-alfworld-twokeychainsafe "$D/CodeLlama-34b-Instruct-hf/F=gpt-4-0613/PHF=no_GT-textual/max5_p2+tool+cd/decision_making/alfworld/results.jsonl" pick_two_obj_and_place-KeyChain-None-Safe-219/trial_T20190909_011803_423115
run mint-codeqwen15-7b-chat-alfworld-lookpencildesklamp "$D/CodeQwen1.5-7B-Chat/F=None/max5_p2+tool+cd/decision_making/alfworld/results.jsonl" look_at_obj_in_light-Pencil-None-DeskLamp-308/trial_T20190908_220545_153480
run mint-codellama-13b-hf-fbgpt4-mmlu-5 "$D/CodeLlama-13b-hf/F=gpt-4-0613/PHF=no_GT-textual/max5_p2+tool+cd/reasoning/mmlu/results.jsonl" 5
run mint-opencodeinterpreter-cl-70b-alfworld-heattomatogarbagecan "$D/OpenCodeInterpreter-CL-70B/F=None/max5_p2+tool+cd/decision_making/alfworld/results.jsonl" pick_heat_then_place_in_recep-Tomato-None-GarbageCan-10/trial_T20190908_225046_020282
run mint-opencodeinterpreter-cl-70b-alfworld-heatmugcabinet "$D/OpenCodeInterpreter-CL-70B/F=None/max5_p2+tool+cd/decision_making/alfworld/results.jsonl" pick_heat_then_place_in_recep-Mug-None-Cabinet-10/trial_T20190909_021200_669381
run mint-agentlm-13b-llama-2-fbgpt4-mmlu-58 "$D/agentlm-13b-llama-2/F=gpt-4-0613/PHF=no_GT-textual/max5_p2+tool+cd/reasoning/mmlu/results.jsonl" 58
run mint-lemur-70b-chat-v1-fbgpt4-alfworld-coollettucecountertop "$D/lemur-70b-chat-v1/F=gpt-4-0613/PHF=no_GT-textual/max5_p2+tool+cd/decision_making/alfworld/results.jsonl" pick_cool_then_place_in_recep-Lettuce-None-CounterTop-10/trial_T20190909_123133_763972
run mint-agentlm-13b-llama-2-hotpotqa-18 "$D/agentlm-13b-llama-2/F=None/max5_p2+tool+cd/reasoning/hotpotqa/results.jsonl" 18
run mint-llama-2-70b-hf-theoremqa-1 "$D/Llama-2-70b-hf/F=None/max5_p2+tool+cd/reasoning/theoremqa/results.jsonl" 1
run mint-lemur-70b-v1-hotpotqa-19 "$D/lemur-70b-v1/F=None/max5_p2+tool+cd/reasoning/hotpotqa/results.jsonl" 19
run mint-magicoder-s-ds-67b-mbpp-84 "$D/Magicoder-S-DS-6.7B/F=None/max5_p2+tool+cd/code_generation/mbpp/results.jsonl" 84
run mint-llama-2-7b-chat-hf-theoremqa-52 "$D/Llama-2-7b-chat-hf/F=None/max5_p2+tool+cd/reasoning/theoremqa/results.jsonl" 52
run mint-agentlm-7b-llama-2-mmlu-8 "$D/agentlm-7b-llama-2/F=None/max5_p2+tool+cd/reasoning/mmlu/results.jsonl" 8
run mint-chat-bison-001-fbgpt4-theoremqa-33 "$D/chat-bison-001/F=gpt-4-0613/PHF=no_GT-textual/max5_p2+tool+cd/reasoning/theoremqa/results.jsonl" 33
run mint-chat-bison-001-alfworld-cleansoapbarcountertop "$D/chat-bison-001/F=None/max5_p2+tool+cd/decision_making/alfworld/results.jsonl" pick_clean_then_place_in_recep-SoapBar-None-CounterTop-424/trial_T20190907_074106_050405
run mint-agentlm-7b-llama-2-fbgpt4-humaneval-4 "$D/agentlm-7b-llama-2/F=gpt-4-0613/PHF=no_GT-textual/max5_p2+tool+cd/code_generation/humaneval/results.jsonl" 4
run mint-lemur-70b-v1-alfworld-heatapplefridge "$D/lemur-70b-v1/F=None/max5_p2+tool+cd/decision_making/alfworld/results.jsonl" pick_heat_then_place_in_recep-Apple-None-Fridge-10/trial_T20190906_182353_418140
run mint-chat-bison-001-fbgpt4-mmlu-12 "$D/chat-bison-001/F=gpt-4-0613/PHF=no_GT-textual/max5_p2+tool+cd/reasoning/mmlu/results.jsonl" 12
run mint-meta-llama-3-8b-instruct-mbpp-16 "$D/Meta-Llama-3-8B-Instruct/F=None/max5_p2+tool+cd/code_generation/mbpp/results.jsonl" 16
run mint-llama-2-13b-chat-hf-mbpp-69 "$D/Llama-2-13b-chat-hf/F=None/max5_p2+tool+cd/code_generation/mbpp/results.jsonl" 69
