#!/bin/sh
# Rebuild the fresh framework and ALFWorld runs of testdata/traces from the snapshots under /work/.mirror (fetch github:OWNER/NAME).
set -e
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-$HERE/../../..}
A=/work/.mirror/microsoft+autogen/repo
L=/work/.mirror/langchain-ai+langgraph/repo
C=/work/.mirror/crewAIInc+crewAI/repo
M=/work/.mirror/camel-ai+camel/repo
K=/work/.mirror/zjunlp+KnowAgent/repo
ac() { git --git-dir=$A show $1:$2 | python3 "$HERE"/../../teams/agentchat_console.py --cell $3 > "$OUT"/$4.jsonl; }
a2() { c=$1; p=$2; o=$3; shift 3; git --git-dir=$A show $c:$p | python3 "$HERE"/../../frameworks/autogen_console_nb.py "$@" > "$OUT"/$o.jsonl; }
lg() { git --git-dir=$L show $1:$2 | python3 "$HERE"/../../teams/langgraph_stream.py --cell $3 > "$OUT"/$4.jsonl 2>/dev/null; }
cr() { git --git-dir=$C show $1:$2 | python3 "$HERE"/../../teams/crewai_cassette.py > "$OUT"/$3.jsonl; }
cm() { git --git-dir=$M show $1:$2 | python3 "$HERE"/../../frameworks/camel_roleplay_nb.py --cell $3 > "$OUT"/$4.jsonl; }
# AutoGen AgentChat (0.4+)
ac 837e1f1e978764847d20c46fbd2f616d07e0aaff python/packages/autogen-core/docs/src/user-guide/agentchat-user-guide/tutorial/selector-group-chat.ipynb 8 agentchat-gpt4o-selector-nba-837e1f1e
ac 187caf071023cabaf4532ea6e8fe4ff2f8f4c2b0 python/packages/autogen-core/docs/src/user-guide/agentchat-user-guide/tracing.ipynb 4 agentchat-gpt4o-tracing-selector-nba-187caf07
git --git-dir=$A show 4d1d3caf5a205a3999600b147c8cc6da544b7e8f:python/docs/src/user-guide/agentchat-user-guide/custom-agents.ipynb | python3 "$HERE"/../../teams/agentchat_console.py --cell 7 | python3 "$HERE"/selector_only.py > "$OUT"/agentchat-gpt4o-selector-arithmetic-4d1d3caf.jsonl
# AutoGen 0.2 (last main-line 0.2 state of notebook/, 289e0f47)
N=289e0f4751c7a1f51e4ae0ec6d1da3ec5961c7ae
# Boss_Assistant is a RetrieveUserProxyAgent (no model): its messages are inputs
a2 $N notebook/agentchat_groupchat_RAG.ipynb autogen-gpt35turbo-groupchat-rag-spark --cell 8 --agents Code_Reviewer,Product_Manager,Senior_Python_Engineer
a2 $N notebook/agentchat_web_info.ipynb autogen-gpt4-webinfo-ytd-289e0f47 --cell 11 --agents assistant --executors user_proxy
# A0's first message is the task passed to initiate_chat: moved to the input of the first model turn
git --git-dir=$A show $N:notebook/agentchat_groupchat_finite_state_machine.ipynb | python3 "$HERE"/../../frameworks/autogen_console_nb.py --cell 16 --agents A0,A1,A2,B0,B1,B2,C0,C1,C2 | python3 "$HERE"/first_as_input.py > "$OUT"/autogen-gpt4o-groupchat-fsm-chocolates.jsonl
# CrewAI test cassettes (HEAD f4731f50)
R=f4731f5025f861c78e3af0487cc80bf5e7c64782
cr $R lib/crewai/tests/cassettes/tools/test_max_usage_count_is_respected.yaml crewai-gpt41mini-max-usage-count-respected
cr $R lib/crewai/tests/cassettes/agents/test_lite_agent_structured_output.yaml crewai-gpt4omini-lite-agent-structured-output
# LangGraph
git --git-dir=$L show 3eccbcb259b45c454e1ebfc010e6fbd2144b5185:examples/2024.11.13_simple_multi_agent_prototype_v2.ipynb | python3 "$HERE"/../../teams/langgraph_stream.py --cell 36 2>/dev/null | python3 "$HERE"/input_to_first.py > "$OUT"/langgraph-gpt4o-handoff-prototype-v2.jsonl
lg 9cdac632a70d6702a3334840f7dcb1bf5521d5c4 examples/tutorials/sql-agent.ipynb 18 langgraph-gpt4o-sql-agent-9cdac632
# CAMEL RolePlaying
cm dfee742f1be915a9693368b6ed993e36c0930fca docs/cookbooks/applications/dynamic_travel_planner.ipynb 36 camel-gpt4omini-travel-planner-dfee742f
cm 6c9486c30d6746eec9b595707bf0db344af5109a cookbooks/agents_tracking.ipynb 39 camel-gpt35turbo-agents-tracking-6c9486c3
# ALFWorld (KnowAgent, Llama-2-13b), runs listed in alfworld_runs.tsv
KC=82bc535f1ef2426ec883a548cb38961f9d1720ee
grep -v '^#' "$HERE"/alfworld_runs.tsv | while IFS="$(printf '\t')" read -r set line game file; do
  git --git-dir=$K show $KC:Self-Learning/trajs/datas/KnowAgentALFWorld_llama-2-13b_$set.jsonl | python3 "$HERE"/../../alfworld/knowagent_trajs.py "$line" "$game" > "$OUT"/$file
done
# calls the harness never answered: no `result`
python3 "$HERE"/drop_null_results.py "$OUT"/*.jsonl
