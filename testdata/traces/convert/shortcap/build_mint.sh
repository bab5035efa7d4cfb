#!/bin/sh
# Rebuild the MINT runs from a bare snapshot of xingyaoww/mint-bench (Apache-2.0).
# Usage: sh testdata/traces/convert/shortcap/build_mint.sh [/path/to/mint-bench.git]
set -e
G=${1:-/work/.mirror/xingyaoww+mint-bench/repo}
C=3f7f12c10bf763be1e6dbdeb42feb57624121f61
HERE=$(dirname "$0")
OUT=${OUT:-$HERE/../..}
run() { # out-name path task-id
  python3 "$HERE/mint_results.py" --git "$G" --commit $C --path "$2" --task-id "$3" > "$OUT/$1.jsonl" 2>/dev/null
}
D=data/outputs
run mint-gpt35-humaneval-21 "$D/gpt-3.5-turbo-0613/F=None/max5_p2+tool+cd/code_generation/humaneval/results.jsonl" 21
run mint-codeactmistral7b-math-33 "$D/CodeActAgent-Mistral-7b-v0.1/F=None/max5_p2+tool+cd/reasoning/math/results.jsonl" 33
run mint-codellama34b-fbgpt4-theoremqa-20 "$D/CodeLlama-34b-Instruct-hf/F=gpt-4-0613/PHF=no_GT-textual/max5_p2+tool+cd/reasoning/theoremqa/results.jsonl" 20
run mint-gpt35-mbpp-6 "$D/gpt-3.5-turbo-0613/F=None/max5_p2+tool+cd/code_generation/mbpp/results.jsonl" 6
run mint-gpt35-mbpp-47 "$D/gpt-3.5-turbo-0613/F=None/max5_p2+tool+cd/code_generation/mbpp/results.jsonl" 47
run mint-codeactmistral7b-hotpotqa-6 "$D/CodeActAgent-Mistral-7b-v0.1/F=None/max5_p2+tool+cd/reasoning/hotpotqa/results.jsonl" 6
run mint-codellama34b-fbgpt4-mmlu-50 "$D/CodeLlama-34b-Instruct-hf/F=gpt-4-0613/PHF=no_GT-textual/max5_p2+tool+cd/reasoning/mmlu/results.jsonl" 50
run mint-gpt35-alfworld-coolpan "$D/gpt-3.5-turbo-0613/F=None/max5_p2+tool+cd/decision_making/alfworld/results.jsonl" pick_cool_then_place_in_recep-Pan-None-CounterTop-10/trial_T20190908_114622_738670
run mint-gpt4-mbpp-11 "$D/gpt-4-0613/F=None/max5_p2+tool+cd/code_generation/mbpp/results.jsonl" 11
run mint-gpt4-humaneval-42 "$D/gpt-4-0613/F=None/max5_p2+tool+cd/code_generation/humaneval/results.jsonl" 42
run mint-gpt4-hotpotqa-7 "$D/gpt-4-0613/F=None/max5_p2+tool+cd/reasoning/hotpotqa/results.jsonl" 7
run mint-gpt4-alfworld-twopeppershaker "$D/gpt-4-0613/F=None/max5_p2+tool+cd/decision_making/alfworld/results.jsonl" pick_two_obj_and_place-PepperShaker-None-Drawer-10/trial_T20190908_010306_215435
run mint-codellama13b-fbgpt4-mmlu-2 "$D/CodeLlama-13b-Instruct-hf/F=gpt-4-0613/PHF=no_GT-textual/max5_p2+tool+cd/reasoning/mmlu/results.jsonl" 2
run mint-lemur70b-fbgpt4-mmlu-51 "$D/lemur-70b-v1/F=gpt-4-0613/PHF=no_GT-textual/max5_p2+tool+cd/reasoning/mmlu/results.jsonl" 51
run mint-llama3-70b-humaneval-39 "$D/Meta-Llama-3-70B-Instruct/F=None/max5_p2+tool+cd/code_generation/humaneval/results.jsonl" 39
run mint-gpt4-humaneval-26 "$D/gpt-4-0613/F=None/max5_p2+tool+cd/code_generation/humaneval/results.jsonl" 26
run mint-opencodeinterp70b-math-16 "$D/OpenCodeInterpreter-CL-70B/F=None/max5_p2+tool+cd/reasoning/math/results.jsonl" 16
run mint-agentlm70b-mbpp-14 "$D/agentlm-70b-llama-2/F=None/max5_p2+tool+cd/code_generation/mbpp/results.jsonl" 14
# corpus3 batch (issue 22): the same output from rephrased searches or rewritten code, a-b-a-b
# alternations, near-identical thoughts, and their healthy look-alikes.
run mint-gpt4-mmlu-47 "$D/gpt-4-0613/F=None/max5_p2+tool+cd/reasoning/mmlu/results.jsonl" 47
run mint-claude2-fbgpt4-mmlu-50 "$D/claude-2/F=gpt-4-0613/PHF=no_GT-textual/max5_p2+tool+cd/reasoning/mmlu/results.jsonl" 50
run mint-claudeinstant1-fbgpt4-mmlu-56 "$D/claude-instant-1/F=gpt-4-0613/PHF=no_GT-textual/max5_p2+tool+cd/reasoning/mmlu/results.jsonl" 56
run mint-gpt35-fbgpt4-mmlu-75 "$D/gpt-3.5-turbo-0613/F=gpt-4-0613/PHF=no_GT-textual/max5_p2+tool+cd/reasoning/mmlu/results.jsonl" 75
run mint-claude2-fbgpt4-hotpotqa-26 "$D/claude-2/F=gpt-4-0613/PHF=no_GT-textual/max5_p2+tool+cd/reasoning/hotpotqa/results.jsonl" 26
run mint-llama2-70bchat-mmlu-24 "$D/Llama-2-70b-chat-hf/F=None/max5_p2+tool+cd/reasoning/mmlu/results.jsonl" 24
run mint-gpt4-humaneval-20 "$D/gpt-4-0613/F=None/max5_p2+tool+cd/code_generation/humaneval/results.jsonl" 20
run mint-lemur70bchat-fbgpt4-mbpp-84 "$D/lemur-70b-chat-v1/F=gpt-4-0613/PHF=no_GT-textual/max5_p2+tool+cd/code_generation/mbpp/results.jsonl" 84
run mint-codellama34b-gsm8k-5 "$D/CodeLlama-34b-Instruct-hf/F=None/max5_p2+tool+cd/reasoning/gsm8k/results.jsonl" 5
run mint-gpt4-fbgpt4-alfworld-cleanknife "$D/gpt-4-0613/F=gpt-4-0613/PHF=no_GT-textual/max5_p2+tool+cd/decision_making/alfworld/results.jsonl" pick_clean_then_place_in_recep-Knife-None-CounterTop-10/trial_T20190909_110531_148235
run mint-claude2-fbgpt4-alfworld-heatmug "$D/claude-2/F=gpt-4-0613/PHF=no_GT-textual/max5_p2+tool+cd/decision_making/alfworld/results.jsonl" pick_heat_then_place_in_recep-Mug-None-CoffeeMachine-10/trial_T20190907_171806_406231
run mint-llama3-70b-mmlu-47 "$D/Meta-Llama-3-70B-Instruct/F=None/max5_p2+tool+cd/reasoning/mmlu/results.jsonl" 47
run mint-llama2-70bchat-mmlu-73 "$D/Llama-2-70b-chat-hf/F=None/max5_p2+tool+cd/reasoning/mmlu/results.jsonl" 73
run mint-gpt4-hotpotqa-18 "$D/gpt-4-0613/F=None/max5_p2+tool+cd/reasoning/hotpotqa/results.jsonl" 18
run mint-claude2-fbgpt4-humaneval-27 "$D/claude-2/F=gpt-4-0613/PHF=no_GT-textual/max5_p2+tool+cd/code_generation/humaneval/results.jsonl" 27
run mint-gpt35-fbgpt4-humaneval-15 "$D/gpt-3.5-turbo-0613/F=gpt-4-0613/PHF=no_GT-textual/max5_p2+tool+cd/code_generation/humaneval/results.jsonl" 15
run mint-gpt4-fbgpt4-mmlu-71 "$D/gpt-4-0613/F=gpt-4-0613/PHF=no_GT-textual/max5_p2+tool+cd/reasoning/mmlu/results.jsonl" 71
run mint-gpt35-fbgpt4-theoremqa-7 "$D/gpt-3.5-turbo-0613/F=gpt-4-0613/PHF=no_GT-textual/max5_p2+tool+cd/reasoning/theoremqa/results.jsonl" 7
run mint-gpt4-mmlu-62 "$D/gpt-4-0613/F=None/max5_p2+tool+cd/reasoning/mmlu/results.jsonl" 62
run mint-llama2-70bchat-fbgpt4-mmlu-57 "$D/Llama-2-70b-chat-hf/F=gpt-4-0613/PHF=no_GT-textual/max5_p2+tool+cd/reasoning/mmlu/results.jsonl" 57
run mint-lemur70b-mmlu-48 "$D/lemur-70b-v1/F=None/max5_p2+tool+cd/reasoning/mmlu/results.jsonl" 48
run mint-llama2-70bchat-alfworld-twosoapbar "$D/Llama-2-70b-chat-hf/F=None/max5_p2+tool+cd/decision_making/alfworld/results.jsonl" pick_two_obj_and_place-SoapBar-None-GarbageCan-424/trial_T20190909_064053_839817
run mint-gpt35-humaneval-15 "$D/gpt-3.5-turbo-0613/F=None/max5_p2+tool+cd/code_generation/humaneval/results.jsonl" 15
run mint-gpt4-fbgpt4-mmlu-63 "$D/gpt-4-0613/F=gpt-4-0613/PHF=no_GT-textual/max5_p2+tool+cd/reasoning/mmlu/results.jsonl" 63
run mint-llama3-70b-humaneval-27 "$D/Meta-Llama-3-70B-Instruct/F=None/max5_p2+tool+cd/code_generation/humaneval/results.jsonl" 27
run mint-lemur70bchat-humaneval-0 "$D/lemur-70b-chat-v1/F=None/max5_p2+tool+cd/code_generation/humaneval/results.jsonl" 0
run mint-gpt4-mbpp-20 "$D/gpt-4-0613/F=None/max5_p2+tool+cd/code_generation/mbpp/results.jsonl" 20
