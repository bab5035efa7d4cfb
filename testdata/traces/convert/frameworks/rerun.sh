#!/bin/sh
# Re-create these runs in testdata/traces (or $OUT) from the fetched snapshots .
set -e
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-$HERE/../..} # testdata/traces
R=/work/.mirror/ysymyth+ReAct/repo
A=/work/.mirror/microsoft+autogen/repo
C=/work/.mirror/camel-ai+camel/repo
for q in 3522 5074 6055 5376 6837 3033 4385 1707 2208 3750 802; do
  git --git-dir=$R show 6bdb3a1fd38b8188fc7ba4102969fe483df8fdc9:FEVER.ipynb | python3 "$HERE"/react_fever_nb.py $q > "$OUT"/react-fever-q$q.jsonl
done
ag() { commit=$1; path=$2; out=$3; shift 3; git --git-dir=$A show $commit:$path | python3 "$HERE"/autogen_console_nb.py "$@" > "$OUT"/$out.jsonl; }
N=6682b6d2d091a3b26859698b50d065a38eb6d4b2
ag $N notebook/agentchat_nested_chats_chess.ipynb autogen-chess-tools-gpt4-white --cell 16 --agents "Player White" --skip "Player White>Player Black,Player Black>Player White"
ag $N notebook/agentchat_nested_chats_chess.ipynb autogen-chess-tools-gpt4-black --cell 16 --agents "Player Black" --skip "Player White>Player Black,Player Black>Player White"
ag $N notebook/agentchat_function_call_code_writing.ipynb autogen-fastapi-engineer-gpt4 --cell 13 --agents Engineer
ag 92153aef7f38f5d3e249a6086f291a9cae80adfe notebook/agentchat_nestedchat_chess.ipynb autogen-nestedchess-gpt4-white --cell 7 --agents PlayerWhite --board BoardAgent --skip "PlayerWhite>PlayerBlack,PlayerBlack>PlayerWhite"
ag 92153aef7f38f5d3e249a6086f291a9cae80adfe notebook/agentchat_nestedchat_chess.ipynb autogen-nestedchess-gpt4-black --cell 7 --agents PlayerBlack --board BoardAgent --skip "PlayerWhite>PlayerBlack,PlayerBlack>PlayerWhite"
ag c3dce99419 notebook/oai_litellm.ipynb autogen-litellm-palm-stock --cell 7 --agents coding_assistant --executors coding_runner
ag d55264a207 notebook/agentchat_capability_long_context_handling.ipynb autogen-longctx-plot-a --cell 3 --agents assistant --executors user_proxy
ag 47d6c7567e notebook/agentchat_capability_long_context_handling.ipynb autogen-longctx-plot-b --cell 4 --agents assistant --executors user_proxy
ag 57a2bea95a notebook/autogen_agentchat_web_info.ipynb autogen-webinfo-ytd --cell 11 --agents assistant --executors user_proxy
ag 7ec8952ea3 notebook/agentchat_autobuild.ipynb autogen-autobuild-gpt4-paper --cell 10 --agents Software_developer,Research_analyst,Data_scientist,Software_engineer --executors User_console_and_Python_code_interpreter
ag 784c4c4f86e8b0c6abeb411f06b3a1b78a74980b notebook/autogen_agent_human_feedback.ipynb autogen-humanfeedback-math --cell 9 --agents assistant --executors user
cam() { commit=$1; path=$2; cell=$3; out=$4; git --git-dir=$C show $commit:$path | python3 "$HERE"/camel_roleplay_nb.py --cell $cell > "$OUT"/$out.jsonl; }
cam 13dc7a7dda66d943949e5448d55e70d5a9481cfe docs/cookbooks/applications/dynamic_travel_planner.ipynb 38 camel-travel-planner
cam cfe9030af3c1a654e393f891130797ad3b02157a docs/cookbooks/applications/dynamic_travel_planner.ipynb 36 camel-travel-planner-b
cam 13dc7a7dda66d943949e5448d55e70d5a9481cfe docs/cookbooks/applications/roleplaying_scraper.ipynb 51 camel-roleplay-scraper
cam 13dc7a7dda66d943949e5448d55e70d5a9481cfe docs/cookbooks/multi_agent_society/agents_society.ipynb 21 camel-society-tradingbot
