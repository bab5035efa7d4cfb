#!/usr/bin/env python3
"""The MANIFEST.json entries of this folder's runs: the labels as written by reading each converted
run (before any detector ran on it), with its source; the "stats" are counted afterwards by
../frameworks/stats.py and decide nothing.

    python3 testdata/traces/convert/teams/manifest.py > entries.json
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
TRACES = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(HERE, "..", "frameworks"))
from stats import stats  # noqa: E402

AUTOGEN = ("microsoft/autogen", "CC-BY-4.0 AND MIT")
LANGGRAPH = ("langchain-ai/langgraph", "MIT")
CREWAI = ("crewAIInc/crewAI", "MIT")
MINI = ("gruckion/mini-swe-agent", "MIT (LICENSE.md of the mini-swe-agent fork; the trajectories themselves are the public SWE-bench bash-only submission 20251118_mini-v1.15.0_gemini-3-pro-preview, copied into this fork)")
AG = "python/packages/autogen-core/docs/src/user-guide/agentchat-user-guide/"
AN = "python/docs/src/user-guide/agentchat-user-guide/"
AGM = "AutoGen AgentChat %s (OpenAIChatCompletionClient gpt-4o%s; the notebook's tools return canned data)"

TAU2 = ("sierra-research/tau2-bench", "MIT")
TR = "src/experiments/model_training/results/"
NOUSER = TR + "gpt-4.1_telecom_no-user_gpt-4.1_1trials.json (entry simulations[%d])"

RUNS = [
    # file, source, path, commit, harness, label, loop_start, pattern, why, model, notes
    ("agentchat-swarm-stock-research-a", AUTOGEN, AN + "swarm.ipynb (console output of cell 16)",
     "4a3634d6da6365ca4e774d4d7be61f863a5f360d", "autogen-agentchat", "healthy", None, "handoff",
     "A Swarm of planner, financial analyst, news analyst and writer: the planner hands off to each in turn, each does its one job (stock data, news, report) and hands back; transfer_to_planner {} with the identical result comes three times (steps 3, 7, 9), each from another agent, and the planner ends with TERMINATE.",
     AGM % ("Swarm", ""), "Multi-agent: one step per model response of any agent, meta.speaker names it."),
    ("agentchat-swarm-stock-research-b", AUTOGEN, AG + "tutorial/swarm.ipynb (console output of cell 16)",
     "c05e0843b246fcf7a69394cd030cdfc641f27239", "autogen-agentchat", "healthy", None, "handoff",
     "The same stock-research Swarm, another execution: three analysts each fetch or write their part and hand back to the planner with the identical transfer_to_planner {} (steps 4, 8, 11); the report is written at step 10 and the planner ends.",
     AGM % ("Swarm", ""), "Multi-agent; an earlier execution of the notebook than agentchat-swarm-stock-research-a."),
    ("agentchat-swarm-flight-refund-a", AUTOGEN, AG + "tutorial/swarm.ipynb (console output of cell 9, both runs of the team)",
     "c05e0843b246fcf7a69394cd030cdfc641f27239", "autogen-agentchat", "healthy", None, "handoff",
     "The travel agent hands off to the refunder, which asks for the reference and hands off to the user; the user's reply comes as input, the flight is refunded and control goes back to the travel agent, which closes.",
     AGM % ("Swarm with HandoffTermination", ""), "Multi-agent; the team is run twice in the cell (the user's reply resumes it), converted as one run."),
    ("agentchat-swarm-flight-refund-b", AUTOGEN, AG + "tutorial/swarm.ipynb (console output of cell 10, both runs of the team)",
     "91a3b92c0da361577715d34fd5788853f998e5b6", "autogen-agentchat", "healthy", None, "handoff",
     "Another execution of the refund Swarm: travel agent asks, hands off to the refunder, the refunder hands off to the user, the user's flight id comes as input, the refund succeeds and the travel agent closes.",
     AGM % ("Swarm with HandoffTermination", ""), "Multi-agent; two runs of the team in one cell, converted as one run."),
    ("agentchat-selector-nba-a", AUTOGEN, AG + "selector-group-chat.ipynb (console output of cell 18)",
     "725d573d5b01efe430e51b6d9a7e7f901b895de3", "autogen-agentchat", "healthy", None, "none",
     "SelectorGroupChat of planner, web search and analyst agents: the first rebound searches fail with 'The tool search_web_tool is not available' (step 4, the wrong agent was picked), the planner reassigns, the searches succeed, the analyst computes the change and the planner answers.",
     "AutoGen AgentChat SelectorGroupChat (the notebook names gpt-4o and gpt-4o-mini clients; the tools return canned data)", "Multi-agent; step 4 is the data analyst calling the web search tool it does not have."),
    ("agentchat-selector-nba-b", AUTOGEN, AN + "selector-group-chat.ipynb (console output of cell 35)",
     "4d1d3caf5a205a3999600b147c8cc6da544b7e8f", "autogen-agentchat", "healthy", None, "none",
     "A SelectorGroupChat without planner: the web search agent searches three times with different queries (points, then rebounds for each season), the analyst asks for the missing season in between, computes the change and answers.",
     "AutoGen AgentChat SelectorGroupChat (the notebook names gpt-4o and o3-mini clients; the tools return canned data)", "Multi-agent; similar texts from two agents asking each other for the next figure."),
    ("agentchat-selector-nba-approve", AUTOGEN, AN + "selector-group-chat.ipynb (console output of cell 31)",
     "4d1d3caf5a205a3999600b147c8cc6da544b7e8f", "autogen-agentchat", "healthy", None, "none",
     "SelectorGroupChat with a user proxy: the planner plans, the user approves ('approve', input on the next step) before each search or computation, each brings new data, and the planner answers.",
     "AutoGen AgentChat SelectorGroupChat with UserProxyAgent (the notebook names gpt-4o and o3-mini clients; the tools return canned data)", "Multi-agent; the three identical 'approve' inputs are a human's, not the model's."),
    ("agentchat-roundrobin-poem-critic", AUTOGEN, AN + "tutorial/teams.ipynb (console output of cell 9)",
     "9a6cc1288e0a0e60bf41f1b7d008ee051b0242bb", "autogen-agentchat", "healthy", None, "none",
     "RoundRobinGroupChat of a poet and a critic: poem, feedback, revised poem, APPROVE.",
     AGM % ("RoundRobinGroupChat", ""), "Multi-agent; four text-only steps."),
    ("langgraph-hierarchical-supervisor-a", LANGGRAPH, "docs/docs/tutorials/multi_agent/hierarchical_agent_teams.ipynb (stream output of cell 27)",
     "3571d168198dcfd5651a0255326d1f9c5c0cda4a", "langgraph", "loops", 4, "identical-call-run",
     "From step 4 the top supervisor routes to ResearchTeam 30 times in a row and the team hands back the identical summary each time (steps 4-33, one changed reply at 34); it then alternates with PaperWritingTeam, the research team echoing the writers' last message, until FINISH at step 47.",
     "gpt-4o / gpt-4o-mini (the notebook names both; LangGraph hierarchical agent teams tutorial, the supervisor routes with structured output)",
     "Only the top graph's updates are printed: each supervisor decision is a `route` call whose result is the team's reply (convert/teams/NOTES.md)."),
    ("langgraph-hierarchical-supervisor-b", LANGGRAPH, "examples/multi_agent/hierarchical_agent_teams.ipynb (stream output of cell 23)",
     "ebcfd2136b6a80df014a08d0ad7b29e96f421322", "langgraph", "loops", 1, "identical-call-run",
     "The supervisor routes to 'Research team' nine times in a row (steps 1-9) and gets the identical research report back each time, then once to the paper writing team, once more to research (the same reply) and FINISH.",
     "gpt-4-1106-preview (LangGraph hierarchical agent teams example, 2024-05)",
     "Only the top graph's updates are printed: each decision is a `route` call, its result the team's reply."),
    ("langgraph-collaboration-gdp-a", LANGGRAPH, "docs/docs/tutorials/multi_agent/multi-agent-collaboration.ipynb (stream output of cell 21)",
     "583d8c9499ede47c8ec3f50f4d62d32e7c4f510c", "langgraph", "unclear", None, "no-tool-stall",
     "After two searches, researcher and chart generator pass text-only messages back and forth for 12 turns (steps 3-14), each rewording that the 2022-2023 figures are missing and nothing can be done; at 15 the researcher searches again, the chart is drawn with the data it has (17-18) and the run ends with FINAL ANSWER.",
     "gpt-4o (recorded model_name; LangGraph multi-agent collaboration tutorial)",
     "Multi-agent network: every AIMessage is a step (meta.speaker). The questionable segment is steps 3-14: a supervisor stopping there would lose the partial answer; agents that say similar things."),
    ("langgraph-collaboration-gdp-b", LANGGRAPH, "docs/docs/tutorials/multi_agent/multi-agent-collaboration.ipynb (stream output of cell 21)",
     "8df6daaeaf7d727d4b18c5d3435a1633cbb644eb", "langgraph", "healthy", None, "none",
     "The researcher searches three times with different queries and gets the five years, calls a chart tool that does not exist (an error), and the chart generator draws the chart with Python and answers.",
     "gpt-4o-2024-08-06 (LangGraph multi-agent collaboration tutorial)", "Multi-agent network; usage and finish reasons as recorded."),
    ("langgraph-supervisor-gdp-claude", LANGGRAPH, "docs/docs/tutorials/multi_agent/agent_supervisor.ipynb (stream output of cell 13)",
     "39e6b3bb4f5f8de267f1b6ca8b908420a07fcc6b", "langgraph", "healthy", None, "handoff",
     "The supervisor routes to the researcher (two searches, an answer), then to the coder (one computation, an answer), then ends.",
     "claude-3-5-sonnet-latest (LangGraph agent supervisor tutorial)",
     "Supervisor decisions are `route` calls whose result is the worker's reply, which is also the worker's last step."),
    ("crewai-repeated-tool-usage-gpt4", CREWAI, "tests/cassettes/test_agent_repeated_tool_usage.yaml",
     "e19bdcb97dbf2acf5695fe817e22c0e28e779dfd", "crewai", "loops", 1, "identical-call-run",
     "Told to keep using get_final_answer, the agent calls it with the identical empty input four times (steps 1-4), the last two answered with CrewAI's own 'I tried reusing the same input, I must stop using this action input'; only CrewAI's forced final-answer message ends it.",
     "gpt-4-0613 (CrewAI ReAct text actions, VCR cassette of a test)",
     "An adversarial test prompt, like the LangChain jester run; the repeat notice is CrewAI's own repetition guard."),
    ("crewai-repeated-tool-usage-b", CREWAI, "tests/cassettes/test_agent_repeated_tool_usage.yaml",
     "efe27bd570d91f00af59f1d605d87e7b82c2bc88", "crewai", "loops", 1, "identical-call-run",
     "The same test recorded again (2025-04, again gpt-4-0613): four identical get_final_answer {} calls (steps 1-4), three of them refused by CrewAI's reuse notice, then the forced final answer.",
     "gpt-4-0613 (CrewAI ReAct text actions, VCR cassette of a test)", "Adversarial test prompt; another recording of crewai-repeated-tool-usage-gpt4."),
    ("crewai-repeated-tool-usage-c", CREWAI, "lib/crewai/tests/cassettes/agents/test_agent_repeated_tool_usage.yaml",
     "d24ff96b97e847f9e441cb0b33d1b1c5377f51f3", "crewai", "loops", 1, "identical-call-run",
     "A third recording (2025-11): get_final_answer {} four times in a row (steps 1-4), the model reasoning that there are no new inputs to try, the reuse notice three times, then the forced final answer.",
     "gpt-4 (CrewAI ReAct text actions, VCR cassette of a test)", "Adversarial test prompt."),
    ("crewai-repeated-tool-usage-nocache", CREWAI, "tests/cassettes/test_agent_repeated_tool_usage_check_even_with_disabled_cache.yaml",
     "e19bdcb97dbf2acf5695fe817e22c0e28e779dfd", "crewai", "unclear", None, "failure-loop",
     "Told to keep using the tool, the agent calls get_final_answer {'anything': '42'} twice (the second refused by CrewAI's reuse notice), changes the argument to 'Please perform action' and gets 42 again, then gives the forced final answer: the same result from a trivially different argument, but only three calls.",
     "gpt-4-0613 (CrewAI ReAct text actions, VCR cassette of a test)",
     "Step 1 is a thought without an action (CrewAI's format notice is not recorded in the reply). The questionable segment is steps 2-4."),
    ("crewai-hierarchical-manager-delegating", CREWAI, "lib/crewai/tests/cassettes/test_manager_agent_delegating_to_assigned_task_agent.yaml",
     "f4731f5025f861c78e3af0487cc80bf5e7c64782", "crewai", "healthy", None, "handoff",
     "A hierarchical crew: the manager delegates the ideas to the researcher (who answers), asks for the paragraphs (no answer recorded), delegates the identical task again (refused by CrewAI's reuse notice) and once more (answered anew), then asks for the paragraphs, gets them and answers.",
     "gpt-4o-2024-05-13 (CrewAI hierarchical process, ReAct text actions, VCR cassette of a test)",
     "Multi-agent: manager and researcher steps interleave (meta.speaker). The same delegation three times (steps 1, 4, 5) with a new answer the last time."),
    ("crewai-hierarchical-process", CREWAI, "lib/crewai/tests/cassettes/test_hierarchical_process.yaml",
     "f4731f5025f861c78e3af0487cc80bf5e7c64782", "crewai", "healthy", None, "handoff",
     "A hierarchical crew with native function calls: the manager asks the researcher and the writer in parallel (step 1), each answers (2, 3), the manager delegates the paragraphs to the writer (4-5) and gives the final answer.",
     "gpt-4.1-mini and gpt-4o-2024-08-06 (CrewAI hierarchical process, native function calling, VCR cassette of a test)", "Multi-agent."),
    ("mini-gemini3pro-django-13297", MINI, "swebench_results/20251118_gemini-3-pro-74pct/trajs/django__django-13297/django__django-13297.traj.json",
     "d12a71affd95403b036b2bdbd827349b77bfffb9", "mini-swe-agent", "healthy", None, "same-text",
     "A 95-step debugging run that narrates 'Run reproduction script.' on 12 steps, each after an edit or a new debug print and each with a new output; it finds that SimpleLazyObject is nested, fixes resolve_lookup_value, runs the tests and submits (7 format errors on the way).",
     "google/gemini-3-pro-preview (mini-swe-agent 1.15.0, text actions)",
     "Narration hard negative for repeated-text: the repeated sentence sits on steps that each bring a new result."),
    ("mini-gemini3pro-django-15280", MINI, "swebench_results/20251118_gemini-3-pro-74pct/trajs/django__django-15280/django__django-15280.traj.json",
     "d12a71affd95403b036b2bdbd827349b77bfffb9", "mini-swe-agent", "healthy", None, "same-text",
     "A 96-step debugging run: 'Run reproduction script.' on 10 steps, each after a new edit or debug print, with new output; it traces the prefetch cache bug to the descriptors, fixes both, reruns the script and the test suites and submits.",
     "google/gemini-3-pro-preview (mini-swe-agent 1.15.0, text actions)", "Narration hard negative."),
    ("mini-gemini3pro-django-14855", MINI, "swebench_results/20251118_gemini-3-pro-74pct/trajs/django__django-14855/django__django-14855.traj.json",
     "d12a71affd95403b036b2bdbd827349b77bfffb9", "mini-swe-agent", "healthy", None, "same-text",
     "A 44-step run that reruns reproduce_issue.py ten times ('Now run `reproduce_issue.py` again.' four times), each after building the reproduction or a debug print, until the URL shows the custom admin; the test suite passes and it submits.",
     "google/gemini-3-pro-preview (mini-swe-agent 1.15.0, text actions)", "Narration and re-running hard negative."),
    ("tau2-telecom-nouser-gpt41-sim35", TAU2, NOUSER % 35, "59d0fb96f4292815e1f6463fb2f139ffef47dc7f", "tau2-bench", "healthy", None, "polling",
     "Solo mode: the agent checks can_send_mms {} after each fix and gets the identical 'cannot send MMS' four times (steps 4, 11, 15, 18), each after another fix (airplane mode and SIM, network mode and roaming, APN reset and reboot, Wi-Fi calling); check_network_status changes each time; after the app permissions the fifth check succeeds (21) and it stops.",
     "gpt-4.1-2025-04-14", "Polling hard negative: the identical call with the identical result, four times, with different fixes between. Telecom task [mms_issue] with seven faults."),
    ("tau2-telecom-nouser-gpt41-sim29", TAU2, NOUSER % 29, "59d0fb96f4292815e1f6463fb2f139ffef47dc7f", "tau2-bench", "healthy", None, "polling",
     "Solo mode: can_send_mms {} answers 'cannot send' three times (steps 5, 8, 12), after no fix, after turning airplane mode off and after roaming; after Wi-Fi calling is turned off the fourth check succeeds (15) and it stops.",
     "gpt-4.1-2025-04-14", "Polling hard negative. Telecom task [mms_issue] with three faults."),
    ("tau2-telecom-nouser-gpt41-sim4", TAU2, NOUSER % 4, "59d0fb96f4292815e1f6463fb2f139ffef47dc7f", "tau2-bench", "healthy", None, "polling",
     "Solo mode: refuels data, then runs run_speed_test {} after each round of fixes: no connection (7), 27.5 Mbps after data, data saver and network mode (14), 275 Mbps after the VPN is disconnected (17), and stops.",
     "gpt-4.1-2025-04-14", "Polling: the same check, a new result each time. Telecom task [mobile_data_issue] with six faults."),
    ("tau2-telecom-ftgpt41-sim38", TAU2, TR + "ft:gpt-4.1-2025-04-14:sierra:tau2-full-sft:BzrYdMNm_telecom_default_gpt-4.1_1trials.json (entry simulations[38])",
     "59d0fb96f4292815e1f6463fb2f139ffef47dc7f", "tau2-bench", "loops", 20, "identical-call-run",
     "After guiding the user through airplane mode, data and APN checks, the fine-tuned model calls get_details_by_id {'id': 'L1002'} in every step from 20 to 91 (72 identical calls, the identical result) until max_steps.",
     "ft:gpt-4.1-2025-04-14:sierra:tau2-full-sft", "Telecom task [mobile_data_issue] with five faults, PERSONA:Hard; the same loop kind as tau2-telecom-ftgpt41-sim35, another task."),
    ("tau2-airline-gpt41-task18", TAU2, TR + "gpt-4.1_airline_default_gpt-4.1_1trials.json (entry simulations[7], task_id=18)",
     "59d0fb96f4292815e1f6463fb2f139ffef47dc7f", "tau2-bench", "healthy", None, "none",
     "Reads six reservations in one step, prices economy on every leg with twelve search_direct_flight calls in one step (each another route or date), downgrades five reservations in one step, computes the refund and answers the user's thanks.",
     "gpt-4.1-2025-04-14", "A sweep in parallel calls: the same tool twelve times in one step with different arguments."),
    ("tau2-telecom-ftgpt41-sim11", TAU2, TR + "ft:gpt-4.1-2025-04-14:sierra:tau2-full-sft:BzrYdMNm_telecom_default_gpt-4.1_1trials.json (entry simulations[11])",
     "59d0fb96f4292815e1f6463fb2f139ffef47dc7f", "tau2-bench", "healthy", None, "none",
     "A No Service case with three faults: the fine-tuned model finds the line suspended for an overdue bill, sends the payment request, resumes the line after the customer pays, then walks the customer through airplane mode, SIM, network reset, network mode and APN; after each of the customer's replies (steps 11-23) it looks line L1002 up again with get_details_by_id and gets the identical details. The APN reset at step 24 restores service and the customer thanks it.",
     "ft:gpt-4.1-2025-04-14:sierra:tau2-full-sft", 'Conversational hard negative: the same lookup seven times, each after the agent answered in words and the customer replied with a new report. A wasteful habit, but every turn moves the troubleshooting on; reward 1. Telecom task [service_issue] airplane_mode_on|break_apn_settings|overdue_bill_suspension.'),
    ("tau2-telecom-ftgpt41-sim24", TAU2, TR + "ft:gpt-4.1-2025-04-14:sierra:tau2-full-sft:BzrYdMNm_telecom_default_gpt-4.1_1trials.json (entry simulations[24])",
     "59d0fb96f4292815e1f6463fb2f139ffef47dc7f", "tau2-bench", "healthy", None, "none",
     "An MMS case with three faults: after the customer's number it reads both lines (L1002 twice in a row, steps 4-5), then guides the customer through network mode and APN checks; after the APN report it looks L1002 up a third time (step 9), finds roaming off on the line and enables it, and then the missing SMS permission fixes MMS (step 14).",
     "ft:gpt-4.1-2025-04-14:sierra:tau2-full-sft", "Conversational hard negative: the third identical lookup comes after two answers in words and the customer's replies, and leads to the roaming fix; reward 1. Telecom task [mms_issue] bad_network_preference|break_app_sms_permission|user_abroad_roaming_disabled_on, PERSONA:Hard."),
    ("tau2-telecom-ftgpt41-sim34", TAU2, TR + "ft:gpt-4.1-2025-04-14:sierra:tau2-full-sft:BzrYdMNm_telecom_default_gpt-4.1_1trials.json (entry simulations[34])",
     "59d0fb96f4292815e1f6463fb2f139ffef47dc7f", "tau2-bench", "healthy", None, "none",
     'An MMS case with seven faults, fixed one after another with the customer: airplane mode and SIM, mobile data and roaming, APN, app permissions, Wi-Fi calling; it looks line L1002 up at steps 4, 11 and 14, each time after the customer reported what a fix changed, then reads the plan, finds the data cap exceeded, refuels 2 GB and MMS works (step 19).',
     "ft:gpt-4.1-2025-04-14:sierra:tau2-full-sft", 'Conversational hard negative: the same lookup three times with several turns of the conversation between each; reward 1. Telecom task [mms_issue] with seven faults.'),
]

EXTRA = {
    "tau2-telecom-nouser-gpt41-sim35": {"reward": 1.0, "termination": "agent_stop"},
    "tau2-telecom-nouser-gpt41-sim29": {"reward": 1.0, "termination": "agent_stop"},
    "tau2-telecom-nouser-gpt41-sim4": {"reward": 1.0, "termination": "agent_stop"},
    "tau2-telecom-ftgpt41-sim38": {"reward": 0.0, "termination": "max_steps"},
    "tau2-airline-gpt41-task18": {"reward": 1.0, "termination": "user_stop"},
    "tau2-telecom-ftgpt41-sim11": {"reward": 1.0, "termination": "user_stop"},
    "tau2-telecom-ftgpt41-sim24": {"reward": 1.0, "termination": "user_stop"},
    "tau2-telecom-ftgpt41-sim34": {"reward": 1.0, "termination": "user_stop"},
}


def main():
    out = []
    for f, (repo, lic), path, commit, harness, label, start, pattern, why, model, notes in RUNS:
        steps = [json.loads(l) for l in open(os.path.join(TRACES, f + ".jsonl"))]
        out.append({
            "file": f + ".jsonl", "harness": harness, "source_repo": repo, "source_path": path,
            "source_commit": commit, "license": lic, "steps": len(steps), "label": label, "why": why,
            "loop_start": start, "pattern": pattern, "stats": stats(steps), "model": model,
            "handwritten": False, "notes": notes, "converter": "convert/teams",
        })
        out[-1].update(EXTRA.get(f, {}))
    json.dump(out, sys.stdout, indent=1)
    print()


main()
