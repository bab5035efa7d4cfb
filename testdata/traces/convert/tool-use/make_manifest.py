"""Write manifest.json from the hand-made labels below plus simple counts of each run.

Rerun (after build.sh, from the repository root):
python3 testdata/traces/convert/tool-use/make_manifest.py > /tmp/tool-use.json (the entries of
MANIFEST.json for these runs)
The labels were written by reading each run (before any counting); the counts in
"stats" are plain tallies (same keys as testdata/traces/MANIFEST.json), no detector.
"""
import collections
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
RUNS = os.path.join(HERE, "..", "..")  # testdata/traces

TAU = ("sierra-research/tau-bench", "59a200c6d575d595120f1cb70fea53cef0632f6b",
       "historical_trajectories/gpt-4o-airline.json")
QWEN = ("sierra-research/tau2-bench", "3a8b3437f40f519ae7204ffe0b8bd5192ffe2fad",
        "src/experiments/eval/data/qwen2.5-7b-retries/ollama_chat/qwen2.5:7b_airline_default_gpt-4.1-2025-04-14_1trials.json")
WHISSLE = ("sierra-research/tau2-bench", "bbcb86ff2e6414631352a7b808b886691f419e3e",
           "results/whissle/airline_run1.json")
OSS = ("sierra-research/tau2-bench", "52a4ed7b7b19189595e49dd10702cdfcbccdcb56",
       "web/leaderboard/public/submissions/gpt-oss-120b_openai_2025-11-26/trajectories/langchain_agent_airline_2025-11-26_00-37-06.json")
MT = "src/experiments/model_training/results/"
MTC = "59d0fb96f4292815e1f6463fb2f139ffef47dc7f"
FT_TEL = ("sierra-research/tau2-bench", MTC, MT + "ft:gpt-4.1-2025-04-14:sierra:tau2-full-sft:BzrYdMNm_telecom_default_gpt-4.1_1trials.json")
G41_TNU = ("sierra-research/tau2-bench", MTC, MT + "gpt-4.1_telecom_no-user_gpt-4.1_1trials.json")
G41_TEL = ("sierra-research/tau2-bench", MTC, MT + "gpt-4.1_telecom_default_gpt-4.1_1trials.json")
G41_RET = ("sierra-research/tau2-bench", MTC, MT + "gpt-4.1_retail_defautl_gpt-4.1_1trials.json")
G41_AIR = ("sierra-research/tau2-bench", MTC, MT + "gpt-4.1_airline_default_gpt-4.1_1trials.json")
G4O_TEL = ("sierra-research/tau2-bench", "8d9b507622399539925847638ebeb0c4cc5f3b56",
           "data/simulations/2025-08-10T02:44:06.496849_telecom_llm_agent_gpt-4o_user_simulator_gpt-4o.json")
TB = ("OpenBMB/ToolBench", "d56fdd89faf8c91fa135090b212bb9057ee5cfc2", "data_example/answer/%s_answer/%s_ChatGPT_DFS_woFilter_w2.json")

# file, harness, source, entry, label, loop_start, pattern, model, why, notes, outcome
RUNS_LABELS = [
    # ---------------- tau-bench (historical trajectories, gpt-4o, airline) ----------------
    ("taubench-airline-gpt4o-t09-r2.jsonl", "tau-bench", TAU, "task_id=9, trial=2", "loops", 22, "cycle", "gpt-4o",
     "From step 22 the agent alternates think and book_reservation with the same payment split, and book_reservation fails five times with the same 'payment amount does not add up, total price is 1203, but paid 833' until the 30-step limit.",
     "The error text gives the right total; the agent never uses it. Steps 24-30 repeat the same think text and the same booking arguments.", {"reward": 0.0}),
    ("taubench-airline-gpt4o-t13-r0.jsonl", "tau-bench", TAU, "task_id=13, trial=0", "loops", 12, "failure-loop", "gpt-4o",
     "update_reservation_flights fails six times (steps 12-25) with 'flight HAT030 not available on date 2024-05-13' while the agent only adds or drops a flight in the list, and steps 19, 21, 24 answer the user's changing complaints with the same text.",
     "It finally drops the old segments at step 27 and the update goes through; a supervisor would still have stopped it well before. Contains canned replies (identical text at 19/21/24).", {"reward": 0.0}),
    ("taubench-airline-gpt4o-t13-r2.jsonl", "tau-bench", TAU, "task_id=13, trial=2", "loops", 6, "failure-loop", "gpt-4o",
     "The same update_reservation_flights fails four times (steps 6, 13, 18, 20) with 'flight HAT030 not available on date 2024-05-13' with only the new flight number changed; the user says 'we might be going in circles' and asks for a transfer.",
     "Same task as t13-r0, another trial; ends with a transfer (reward 1.0 because the task accepts it).", {"reward": 1.0}),
    ("taubench-airline-gpt4o-t03-r0.jsonl", "tau-bench", TAU, "task_id=3, trial=0", "healthy", None, "none", "gpt-4o",
     "Looks up seven different reservations (steps 4-10), searches, then retries update_reservation_flights with different cabins and payment methods as the user changes them (several distinct errors) until it succeeds at step 29.",
     "Healthy retries: each failure has a different cause and the user supplies a new payment each time. Hits the 30-step limit right after the success.", {"reward": 0.0}),
    ("taubench-airline-gpt4o-t23-r3.jsonl", "tau-bench", TAU, "task_id=23, trial=3", "healthy", None, "none", "gpt-4o",
     "Distinct lookups and searches, then update_reservation_flights fails for payment reasons as the user proposes different payment methods, and the agent transfers to a human when none works.",
     "Repeated failing call (steps 19, 21, 25) but every attempt follows a new user instruction; the run ends cleanly with a transfer.", {"reward": 0.0}),
    ("taubench-airline-gpt4o-t20-r1.jsonl", "tau-bench", TAU, "task_id=20, trial=1", "healthy", None, "none", "gpt-4o",
     "Changes a flight; update_reservation_flights fails twice (payment method not found, certificate not allowed) and succeeds with the gift card, then transfers for a bag request.",
     "Retry that succeeds.", {"reward": 1.0}),
    ("taubench-airline-gpt4o-t17-r3.jsonl", "tau-bench", TAU, "task_id=17, trial=3", "healthy", None, "none", "gpt-4o",
     "Finds the right reservation, searches two dates, prices options with think/calculate, and ends when the user declines.",
     "", {"reward": 1.0}),
    # ---------------- tau2-bench: qwen2.5:7b via ollama, airline ----------------
    ("tau2-airline-qwen25-7b-task38.jsonl", "tau2-bench", QWEN, "simulations[48], task_id=38", "loops", 22, "cycle", "qwen2.5:7b (ollama)",
     "From step 22 the agent goes round a six-step cycle (search_onestop_flight FRA-MAD for another date, 'I couldn't find...', 'Sure, let's check your reservation history...', get_reservation_details 4OG6T3, 'I found another recent reservation', 'Sure, let's continue the search...') eight times until the user simulator gives up.",
     "Texts repeat verbatim (one text 9 times, another 7) while the user's messages change; the searched date changes each round.", {"reward": 0.0, "termination": "user_stop"}),
    ("tau2-airline-qwen25-7b-task40.jsonl", "tau2-bench", QWEN, "simulations[43], task_id=40", "loops", 2, "identical-call-run", "qwen2.5:7b (ollama)",
     "update_reservation_passengers with the same arguments fails ten times with 'Number of passengers does not match', between near-identical requests for the flight number, until tau2 stops the run for too many errors.",
     "The identical calls are separated by 1-3 text-only turns. The user repeats 'I just want the name changed' every turn.", {"reward": 0.0, "termination": "too_many_errors"}),
    ("tau2-airline-qwen25-7b-task27.jsonl", "tau2-bench", QWEN, "simulations[22], task_id=27", "loops", 5, "identical-call-run", "qwen2.5:7b (ollama)",
     "get_reservation_details is called five times with the user id instead of a reservation id and fails the same way each time ('Reservation ethan_martin_2396 not found'), with 'let's try one more time' replies in between.",
     "The user repeats the same details in every message; near-identical apologies at steps 11-15.", {"reward": 0.0, "termination": "user_stop"}),
    ("tau2-airline-qwen25-7b-task20.jsonl", "tau2-bench", QWEN, "simulations[23], task_id=20", "loops", 26, "identical-call-run", "qwen2.5:7b (ollama)",
     "After a long but productive search, book_reservation fails three times in a row with the same arguments and 'Payment method certificate_1 not found' (steps 26, 28, 30) while the user just keeps saying yes.",
     "A short loop at the end of an otherwise progressing run; search_direct_flight with the same arguments at steps 3, 5, 11, 15 is re-reading for the user's new constraints, not the loop.", {"reward": 0.0, "termination": "user_stop"}),
    ("tau2-airline-qwen25-7b-task4.jsonl", "tau2-bench", QWEN, "simulations[10], task_id=4", "healthy", None, "none", "qwen2.5:7b (ollama)",
     "A weak but moving agent: searches JFK-ORD on different dates, checks flight status on three dates, offers compensation, and transfers when the user refuses it.",
     "Step 1 writes a function call as plain text (not executed). Same function, different arguments (dates).", {"reward": 1.0, "termination": "user_stop"}),
    # ---------------- tau2-bench: Whissle agent (pull request 448), airline ----------------
    ("tau2-airline-whissle-task23.jsonl", "tau2-bench", WHISSLE, "simulations[25], task_id=23", "loops", 17, "canned-reply", "whissle (platform agent, model not disclosed)",
     "From step 17 the agent answers eleven differently worded confirmations with the identical 'I'm sorry, could you rephrase that?', then makes a malformed booking and the user gives up.",
     "The canonical canned-reply loop: no tool calls, changing user input, same text.", {"reward": 0.0, "termination": "user_stop"}),
    ("tau2-airline-whissle-task6.jsonl", "tau2-bench", WHISSLE, "simulations[6], task_id=6", "loops", 1, "canned-reply", "whissle (platform agent, model not disclosed)",
     "Every other step calls transfer_to_human_agents and the next says the identical 'YOU ARE BEING TRANSFERRED TO A HUMAN AGENT. PLEASE HOLD ON.' five times while the user keeps asking not to be transferred.",
     "Short (10 steps). Also a 2-step cycle (transfer call with a reworded summary, then the same text). Reward 1.0: the task only checks that nothing was changed.", {"reward": 1.0, "termination": "user_stop"}),
    ("tau2-airline-whissle-task21.jsonl", "tau2-bench", WHISSLE, "simulations[22], task_id=21", "unclear", None, "canned-reply", "whissle (platform agent, model not disclosed)",
     "Bursts of the identical 'I'm sorry, could you rephrase that?' (step 17, steps 25-27, steps 29-32, step 36) answering rephrased user messages, but between and after them the agent makes progress and completes the change (reward 1.0).",
     "Kept as a hard case: a rule that stops after 3-4 identical replies would stop a run that eventually succeeds; a supervisor might still have stopped it at step 32.", {"reward": 1.0, "termination": "user_stop"}),
    ("tau2-airline-whissle-task4.jsonl", "tau2-bench", WHISSLE, "simulations[5], task_id=4", "healthy", None, "none", "whissle (platform agent, model not disclosed)",
     "Reads five reservations, then calls search_direct_flight JFK-ORD for thirteen consecutive dates (steps 10-22), every one returning [], reports that no such flight exists and transfers.",
     "Very repetitive-looking and healthy: same function, same empty result, a new date each time (a systematic scan).", {"reward": 1.0, "termination": "user_stop"}),
    # ---------------- tau2-bench: LangChain/LangGraph create_react_agent with gpt-oss-120b ----------------
    ("tau2-airline-gptoss120b-task28.jsonl", "tau2-bench", OSS, "simulations[29], task_id=28", "loops", 2, "identical-call-run", "gpt-oss-120b (LangGraph create_react_agent)",
     "transfer_to_human_agents with the same summary is called at step 1 and then alone in every step from 2 to 100, each answered 'Transfer successful', until tau2's max_steps.",
     "99 identical calls; the user never gets another turn. Step 1 also reads the reservation.", {"reward": 0.0, "termination": "max_steps"}),
    ("tau2-airline-gptoss120b-task30.jsonl", "tau2-bench", OSS, "simulations[31], task_id=30", "loops", 5, "identical-call-run", "gpt-oss-120b (LangGraph create_react_agent)",
     "After updating flights and bags at step 4, the agent calls update_reservation_baggages with the same arguments fourteen more times (steps 5-18), each succeeding with the same result, before it finally reports the change at step 19.",
     "Identical successful calls: no error, the outcome is the same each time.", {"reward": 0.0, "termination": "user_stop"}),
    ("tau2-airline-gptoss120b-task6.jsonl", "tau2-bench", OSS, "simulations[8], task_id=6", "loops", 2, "cycle", "gpt-oss-120b (LangGraph create_react_agent)",
     "The agent transfers to a human six times (steps 2-15), each followed by the same 'YOU ARE BEING TRANSFERRED...' or a near-identical refusal, while the user keeps asking not to be transferred.",
     "Reward 1.0 (nothing may change in this task). The simulated user (also gpt-oss-120b) sometimes talks like an agent.", {"reward": 1.0, "termination": "user_stop"}),
    ("tau2-airline-gptoss120b-task9.jsonl", "tau2-bench", OSS, "simulations[14], task_id=9", "loops", 17, "failure-loop", "gpt-oss-120b (LangGraph create_react_agent)",
     "From step 17 the agent books the same itinerary again and again (nine book_reservation calls in steps 17-26 with small payment changes): three bookings succeed, the others fail ('certificate not found' twice, then 'Too many reservations' four times) until tau2 stops it for too many errors.",
     "Failures before step 17 each follow a new user choice and are healthy.", {"reward": 0.0, "termination": "too_many_errors"}),
    # ---------------- tau2-bench: Sierra's own gpt-4.1 runs (model_training results) ----------------
    ("tau2-telecom-ftgpt41-sim35.jsonl", "tau2-bench", FT_TEL, "simulations[35]", "loops", 5, "identical-call-run", "ft:gpt-4.1-2025-04-14:sierra:tau2-full-sft",
     "From step 5 the fine-tuned model calls get_details_by_id {'id': 'P1002'} in every remaining step (96 identical calls, same result) until max_steps.",
     "Telecom task [mobile_data_issue]bad_network_preference|bad_vpn|user_abroad_roaming_disabled_off[PERSONA:Hard]. finish_reason is tool_calls on every looping step.", {"reward": 0.0, "termination": "max_steps"}),
    ("tau2-telecom-nouser-gpt41-sim13.jsonl", "tau2-bench", G41_TNU, "simulations[13]", "healthy", None, "none", "gpt-4.1-2025-04-14",
     "Solo mode (agent drives the phone itself): looks up the account, refuels data, then fixes one setting after another and re-runs run_speed_test after each fix (steps 7, 14, 17, 21, 24) until it passes.",
     "Re-running the same check after each fix, like re-running tests; same call, result changes only at the end.", {"reward": 1.0, "termination": "agent_stop"}),
    ("tau2-telecom-nouser-gpt41-sim38.jsonl", "tau2-bench", G41_TNU, "simulations[38]", "healthy", None, "none", "gpt-4.1-2025-04-14",
     "Solo mode: works through roaming, airplane mode, SIM, network mode, APN, data refuel, then MMS settings, re-running run_speed_test and can_send_mms after each fix until MMS works.",
     "Repeated checks after fixes; every fix is different.", {"reward": 1.0, "termination": "agent_stop"}),
    ("tau2-telecom-gpt41-sim8.jsonl", "tau2-bench", G41_TEL, "simulations[8]", "healthy", None, "none", "gpt-4.1-2025-04-14",
     "Guides the user step by step (airplane mode, data, data saver, SIM, APN, network mode), finds the data limit exceeded, refuels 2 GB, and transfers when the speed test still fails.",
     "Mostly text-only steps, each answering a new observation from the user.", {"reward": 0.0, "termination": "user_stop"}),
    ("tau2-retail-gpt41-task62.jsonl", "tau2-bench", G41_RET, "simulations[26], task_id=62", "healthy", None, "none", "gpt-4.1-2025-04-14",
     "modify_pending_order_items fails three times with different arguments and different errors as the agent learns the tool's rules, then succeeds at step 19.",
     "Retries that succeed.", {"reward": 0.0, "termination": "user_stop"}),
    ("tau2-airline-gpt41-task32.jsonl", "tau2-bench", G41_AIR, "simulations[15], task_id=32", "healthy", None, "none", "gpt-4.1-2025-04-14",
     "Reads four reservations to find the right one, checks the flight, prices an upgrade, explains the policy and transfers when the user wants something outside it.",
     "get_reservation_details four times with different ids.", {"reward": 0.0, "termination": "user_stop"}),
    ("tau2-telecom-gpt4o-sim12.jsonl", "tau2-bench", G4O_TEL, "simulations[12]", "healthy", None, "none", "gpt-4o",
     "Troubleshoots 'No Service' step by step with the user, finds an overdue bill, sends a payment request, tries to resume the line (fails: not suspended) and transfers.",
     "", {"reward": 0.0, "termination": "user_stop"}),
    # ---------------- ToolBench DFSDT (ChatGPT, gpt-3.5-turbo era) ----------------
    ("toolbench-dfsdt-G1-57.jsonl", "toolbench-dfsdt", TB, ("G1", "57"), "healthy", None, "none", "ChatGPT (gpt-3.5-turbo, ToolBench DFSDT)",
     "Searches for iPhone 14 products and news with different queries and endpoints, gives up and restarts once, then answers.",
     "search_b_for_seo_api 'iPhone 14 news' repeats once after a backtrack (steps 5 and 9).", {"win": True}),
    ("toolbench-dfsdt-G1-59.jsonl", "toolbench-dfsdt", TB, ("G1", "59"), "healthy", None, "none", "ChatGPT (gpt-3.5-turbo, ToolBench DFSDT)",
     "Four different searches for hashtags (three languages), then a final answer.", "", {"win": True}),
    ("toolbench-dfsdt-G1-69.jsonl", "toolbench-dfsdt", TB, ("G1", "69"), "loops", 2, "failure-loop", "ChatGPT (gpt-3.5-turbo, ToolBench DFSDT)",
     "Every news call returns 401, and the agent keeps calling made-up authentication functions (authenticate_authentication_system twice in a row, invalid_hallucination_function_name twice, login, authenticate_for_currents_news...) that fail with 'No such function name', and the same 401 calls again, for 24 steps.",
     "The harness marks the made-up names as errors (observation_code 1); the 401s come back as normal responses (code 0).", {"win": False}),
    ("toolbench-dfsdt-G2-10.jsonl", "toolbench-dfsdt", TB, ("G2", "10"), "loops", 5, "failure-loop", "ChatGPT (gpt-3.5-turbo, ToolBench DFSDT)",
     "The CEP lookup for '24680' fails with a harness 'Message error' and is called again and again (steps 5-7 back to back, then 11-12 with '24680-000', 17, 20, 21, 25...), between the same tracking calls, across several give-up-and-restart branches.",
     "DFSDT backtracking: a step after a restart continues from an earlier node (meta.backtrack).", {"win": False}),
    ("toolbench-dfsdt-G2-119.jsonl", "toolbench-dfsdt", TB, ("G2", "119"), "loops", 1, "cycle", "ChatGPT (gpt-3.5-turbo, ToolBench DFSDT)",
     "Ping-pong between api_tracking_for_pack_send('ABC456') and get_track_info_for_pridnestrovie_post('RB413450335SG'), both failing the same way, with Finish(give_up_and_restart) in between, for the whole run.",
     "The errors are inside the responses (code 0), so no call has 'error'.", {"win": False}),
    ("toolbench-dfsdt-G2-52.jsonl", "toolbench-dfsdt", TB, ("G2", "52"), "loops", 1, "cycle", "ChatGPT (gpt-3.5-turbo, ToolBench DFSDT)",
     "The same four calls (tracking RB413450335SG, which always fails, CEP 75094080, companies_for_kargom_nerede, checkhealth) come back in turn for 27 steps before it answers with the CEP data it had at step 2.",
     "Ends with a final answer (win), but nothing new was learned after step 2.", {"win": True}),
    ("toolbench-dfsdt-G3-3.jsonl", "toolbench-dfsdt", TB, ("G3", "3"), "loops", 2, "failure-loop", "ChatGPT (gpt-3.5-turbo, ToolBench DFSDT)",
     "detailed_cocktail_recipe_by_id fails 18 times with the same 'request invalid, data error' (observation_code 12) while the id changes (6, 1, 2, 3, 4, 4, 5, 3, 3, 4, 5, 6, 7, 8, 9, 9, 8, 7), between re-reads of the cocktail list and unrelated calls.",
     "Same error while the argument changes a little: the failure-loop pattern of issue 11.", {"win": True}),
    ("toolbench-dfsdt-G3-8.jsonl", "toolbench-dfsdt", TB, ("G3", "8"), "loops", 2, "failure-loop", "ChatGPT (gpt-3.5-turbo, ToolBench DFSDT)",
     "search_basic_free_for_streaming_availability keeps failing with 'Message error' (identical arguments at steps 4-7 and 12-16), then every call fails with 'request invalid' while the agent retries the same searches until the budget ends.",
     "27 of 43 calls are marked as errors by the harness.", {"win": False}),
    ("toolbench-dfsdt-G3-15.jsonl", "toolbench-dfsdt", TB, ("G3", "15"), "loops", 1, "identical-call-run", "ChatGPT (gpt-3.5-turbo, ToolBench DFSDT)",
     "search_people_q_query_for_tvmaze is called in each of the first seven steps with 'specific actor' (twice 'specific_actor'), each time answered that the endpoint does not exist, then search_shows gets the same treatment.",
     "Later steps 24-33 page through services with different arguments (healthy-looking), and it ends with an answer; the start is a clear loop.", {"win": True}),
]


def sig(step):
    return json.dumps([(c.get("name"), c.get("args")) for c in step["toolCalls"]], sort_keys=True)


def longest_run(seq, key, skip=None):
    best = (0, None)
    cur, start, prev = 0, None, object()
    for i, s in enumerate(seq, 1):
        if skip and skip(s):
            continue
        k = key(s)
        if k is not None and k == prev:
            cur += 1
        else:
            cur, start = (1, i) if k is not None else (0, None)
        prev = k
        if cur > best[0]:
            best = (cur, start)
    return {"length": best[0], "start": best[1]}


def longest_cycle(seq):
    keys = [sig(s) if s["toolCalls"] else "T:" + s["text"] for s in seq]
    best = None
    for p in (2, 3):
        i = 0
        while i + p < len(keys):
            j = i + p
            while j < len(keys) and keys[j] == keys[j - p]:
                j += 1
            length = j - i
            if length >= 2 * p and len(set(keys[i:i + p])) == p:
                if best is None or length > best["length"]:
                    best = {"period": p, "start": i + 1, "length": length, "repetitions": round(length / p, 2)}
            i += 1
    return best


def stats(steps):
    calls = sum(len(s["toolCalls"]) for s in steps)
    texts = collections.Counter(s["text"] for s in steps if s["text"] and not s["toolCalls"])
    top = texts.most_common(1)
    return {
        "steps": len(steps),
        "toolCalls": calls,
        "errors": sum(1 for s in steps for c in s["toolCalls"] if c.get("error")),
        "maxIdenticalConsecutiveToolStep": longest_run(steps, lambda s: sig(s) if s["toolCalls"] else None),
        "maxIdenticalToolCallRunIgnoringTextOnlySteps": longest_run(steps, sig, skip=lambda s: not s["toolCalls"]),
        "longestCycle": longest_cycle(steps),
        "maxTextOnlyStreak": longest_run(steps, lambda s: "t" if not s["toolCalls"] else None),
        "maxIdenticalFullStepRun": longest_run(steps, lambda s: s["text"] + sig(s))["length"],
        "mostRepeatedTextReply": top[0][1] if top else 0,
    }


def main():
    out = []
    for (f, harness, src, entry, label, start, pattern, model, why, notes, outcome) in RUNS_LABELS:
        steps = [json.loads(l) for l in open(os.path.join(RUNS, f))]
        repo, commit, path = src
        if harness == "toolbench-dfsdt":
            path = path % entry
            entry = None
        e = {
            "file": f,
            "harness": harness,
            "source_repo": repo,
            "source_path": path + (" (entry %s)" % entry if entry else ""),
            "source_commit": commit,
            "license": "Apache-2.0" if repo == "OpenBMB/ToolBench" else "MIT",
            "steps": len(steps),
            "label": label,
            "why": why,
            "loop_start": start,
            "pattern": pattern,
            "model": model,
            "handwritten": False,
            "notes": notes,
            "stats": stats(steps),
        }
        e.update(outcome)
        if label != "loops":
            assert start is None, f
        out.append(e)
    json.dump(out, sys.stdout, indent=1, ensure_ascii=False)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
