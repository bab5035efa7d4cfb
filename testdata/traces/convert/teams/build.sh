#!/bin/sh
# Re-create the team, framework and narration runs of this folder in testdata/traces (or $OUT)
# from the fetched snapshots (exact commits below). Each line is the recipe for one run.
set -e
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-$HERE/../..} # testdata/traces
A=/work/.mirror/microsoft+autogen/repo
L=/work/.mirror/langchain-ai+langgraph/repo
C=/work/.mirror/crewAIInc+crewAI/repo
M=/work/.mirror/gruckion+mini-swe-agent/repo
ac() { git --git-dir=$A show $1:$2 | python3 "$HERE"/agentchat_console.py --cell $3 > "$OUT"/$4.jsonl; }
lg() { git --git-dir=$L show $1:$2 | python3 "$HERE"/langgraph_stream.py --cell $3 > "$OUT"/$4.jsonl 2>/dev/null; }
cr() { git --git-dir=$C show $1:$2 | python3 "$HERE"/crewai_cassette.py > "$OUT"/$3.jsonl; }
mi() { git --git-dir=$M show d12a71affd95403b036b2bdbd827349b77bfffb9:swebench_results/20251118_gemini-3-pro-74pct/trajs/$1/$1.traj.json | python3 "$HERE"/mini_swe_traj.py > "$OUT"/$2.jsonl; }
AG=python/packages/autogen-core/docs/src/user-guide/agentchat-user-guide
AN=python/docs/src/user-guide/agentchat-user-guide
ac 4a3634d6da6365ca4e774d4d7be61f863a5f360d $AN/swarm.ipynb 16 agentchat-swarm-stock-research-a
ac c05e0843b246fcf7a69394cd030cdfc641f27239 $AG/tutorial/swarm.ipynb 16 agentchat-swarm-stock-research-b
ac c05e0843b246fcf7a69394cd030cdfc641f27239 $AG/tutorial/swarm.ipynb 9 agentchat-swarm-flight-refund-a
ac 91a3b92c0da361577715d34fd5788853f998e5b6 $AG/tutorial/swarm.ipynb 10 agentchat-swarm-flight-refund-b
ac 725d573d5b01efe430e51b6d9a7e7f901b895de3 $AG/selector-group-chat.ipynb 18 agentchat-selector-nba-a
ac 4d1d3caf5a205a3999600b147c8cc6da544b7e8f $AN/selector-group-chat.ipynb 35 agentchat-selector-nba-b
ac 4d1d3caf5a205a3999600b147c8cc6da544b7e8f $AN/selector-group-chat.ipynb 31 agentchat-selector-nba-approve
ac 9a6cc1288e0a0e60bf41f1b7d008ee051b0242bb $AN/tutorial/teams.ipynb 9 agentchat-roundrobin-poem-critic
lg 3571d168198dcfd5651a0255326d1f9c5c0cda4a docs/docs/tutorials/multi_agent/hierarchical_agent_teams.ipynb 27 langgraph-hierarchical-supervisor-a
lg ebcfd2136b6a80df014a08d0ad7b29e96f421322 examples/multi_agent/hierarchical_agent_teams.ipynb 23 langgraph-hierarchical-supervisor-b
lg 583d8c9499ede47c8ec3f50f4d62d32e7c4f510c docs/docs/tutorials/multi_agent/multi-agent-collaboration.ipynb 21 langgraph-collaboration-gdp-a
lg 8df6daaeaf7d727d4b18c5d3435a1633cbb644eb docs/docs/tutorials/multi_agent/multi-agent-collaboration.ipynb 21 langgraph-collaboration-gdp-b
lg 39e6b3bb4f5f8de267f1b6ca8b908420a07fcc6b docs/docs/tutorials/multi_agent/agent_supervisor.ipynb 13 langgraph-supervisor-gdp-claude
cr e19bdcb97dbf2acf5695fe817e22c0e28e779dfd tests/cassettes/test_agent_repeated_tool_usage.yaml crewai-repeated-tool-usage-gpt4
cr efe27bd570d91f00af59f1d605d87e7b82c2bc88 tests/cassettes/test_agent_repeated_tool_usage.yaml crewai-repeated-tool-usage-b
cr d24ff96b97e847f9e441cb0b33d1b1c5377f51f3 lib/crewai/tests/cassettes/agents/test_agent_repeated_tool_usage.yaml crewai-repeated-tool-usage-c
cr e19bdcb97dbf2acf5695fe817e22c0e28e779dfd tests/cassettes/test_agent_repeated_tool_usage_check_even_with_disabled_cache.yaml crewai-repeated-tool-usage-nocache
cr f4731f5025f861c78e3af0487cc80bf5e7c64782 lib/crewai/tests/cassettes/test_manager_agent_delegating_to_assigned_task_agent.yaml crewai-hierarchical-manager-delegating
cr f4731f5025f861c78e3af0487cc80bf5e7c64782 lib/crewai/tests/cassettes/test_hierarchical_process.yaml crewai-hierarchical-process
mi django__django-13297 mini-gemini3pro-django-13297
mi django__django-15280 mini-gemini3pro-django-15280
mi django__django-14855 mini-gemini3pro-django-14855
# tau2-bench (telecom solo mode and airline): polling checks and a parallel sweep
T=/work/.mirror/sierra-research+tau2-bench/repo
TR=src/experiments/model_training/results
t2() { git --git-dir=$T show 59d0fb96f4292815e1f6463fb2f139ffef47dc7f:"$TR/$1" | python3 "$HERE"/../tool-use/tau2_results.py $2 > "$OUT"/$3.jsonl; }
t2 gpt-4.1_telecom_no-user_gpt-4.1_1trials.json 35 tau2-telecom-nouser-gpt41-sim35
t2 gpt-4.1_telecom_no-user_gpt-4.1_1trials.json 29 tau2-telecom-nouser-gpt41-sim29
t2 gpt-4.1_telecom_no-user_gpt-4.1_1trials.json 4 tau2-telecom-nouser-gpt41-sim4
t2 "ft:gpt-4.1-2025-04-14:sierra:tau2-full-sft:BzrYdMNm_telecom_default_gpt-4.1_1trials.json" 38 tau2-telecom-ftgpt41-sim38
t2 "ft:gpt-4.1-2025-04-14:sierra:tau2-full-sft:BzrYdMNm_telecom_default_gpt-4.1_1trials.json" 11 tau2-telecom-ftgpt41-sim11
t2 "ft:gpt-4.1-2025-04-14:sierra:tau2-full-sft:BzrYdMNm_telecom_default_gpt-4.1_1trials.json" 24 tau2-telecom-ftgpt41-sim24
t2 "ft:gpt-4.1-2025-04-14:sierra:tau2-full-sft:BzrYdMNm_telecom_default_gpt-4.1_1trials.json" 34 tau2-telecom-ftgpt41-sim34
t2 gpt-4.1_airline_default_gpt-4.1_1trials.json 7 tau2-airline-gpt41-task18
