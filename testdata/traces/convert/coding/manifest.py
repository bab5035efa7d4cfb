#!/usr/bin/env python3
"""Writes manifest.json from the hand-written labels below plus counts taken from testdata/traces/.

Rerun (from the repository root): python3 testdata/traces/convert/coding/manifest.py > /tmp/coding.json
(the entries of MANIFEST.json for these runs)
The labels were written by reading each run, before these counts were computed; the "stats"
block only describes the file (same keys as testdata/traces/MANIFEST.json) and decides nothing.
"""
import json
import os

AIDER = dict(harness="aider", source_repo="Aider-AI/aider", source_path="tests/fixtures/chat-history.md",
             source_commit="5dc9490bb35f9729ef2c95d00a19ccd30c26339c", license="Apache-2.0",
             handwritten=False)
OH_MSWE = dict(harness="openhands", source_repo="OpenHands/OpenHands",
               source_path="evaluation/benchmarks/multi_swe_bench/examples/output.jsonl",
               source_commit="3d22520992ea4a65c183376e8568bad6d4dedeec", license="MIT", handwritten=False,
               model="openai/openrouter-llama-4-maverick (meta-llama/llama-4-maverick; CodeActAgent, OpenHands v0.35.0, max 50 iterations)")
OH_RES = dict(harness="openhands", source_repo="OpenHands/OpenHands",
              source_path="tests/unit/resolver/mock_output/output.jsonl",
              source_commit="ca424ec15d3348618da32bb6b974f3e6fa2e9073", license="MIT", handwritten=False,
              model="not recorded (OpenHands resolver, CodeActAgent with <execute_ipython>/agentskills text actions, late 2024)")
SWE = dict(harness="swe-agent", source_repo="SWE-agent/SWE-agent",
           source_commit="3ea751c087f32b16e039a2233dd6eefecef325d5", license="MIT", handwritten=False,
           model="gpt4 (per the run directory name; SWE-agent 0.x, text actions)")
MOAT = dict(harness="moatless", source_repo="aorwall/moatless-tree-search",
            source_path="tests/benchmark/data/scikit-learn__scikit-learn-13779/trajectory.json",
            source_commit="bc66ea64e3fe96cf3c90f197b4bab9aaa15e1eb9", license="Apache-2.0", handwritten=False,
            model="openrouter/anthropic/claude-3.5-sonnet (planner states) + azure/gpt-4o (EditCode)")
CHATDEV = dict(harness="chatdev", source_repo="OpenBMB/ChatDev", source_commit="31fd994416a251ecdeb1f0a73c329271743bfb56",
               license="Apache-2.0", handwritten=False)
SONNET = "claude-3-5-sonnet-20240620 (aider 0.47-0.51, diff edit format; weak model claude-3-haiku writes commit messages)"

RUNS = [
    # ---------------- aider: loops
    dict(AIDER, file="aider-claude35-20240809-1812.jsonl", label="loops", pattern="failure-loop", loop_start=4,
         why="Steps 4-7: four replies in a row whose SEARCH/REPLACE blocks for the same pypager import fail to match (SearchReplaceNoExactMatch), each with slightly different SEARCH text, until aider stops at 'Only 3 reflections allowed'.",
         model=SONNET, notes="session at line 26449 of the fixture; step 3 is a reply the user interrupted (^C), so aider applied none of its blocks (toolCalls [])."),
    dict(AIDER, file="aider-claude35-20240807-1324.jsonl", label="loops", pattern="failure-loop", loop_start=3,
         why="Steps 3-5: to fix a lint error the model sends three different guesses of main.py's import lines, each failing with SearchReplaceNoExactMatch, and aider stops at 'Only 3 reflections allowed'; after the user's /clear a new approach works at step 6.",
         model=SONNET, notes="session at line 9930; the harness's own cap ended the loop."),
    dict(AIDER, file="aider-claude35-20240817-0645.jsonl", label="loops", pattern="failure-loop", loop_start=3,
         why="Steps 3-7 keep editing the already-present `self.cache_prompts` line of base_coder.py: SearchReplaceNoExactMatch at 3, 4, 6 and 7 and a no-op edit (SEARCH equal to REPLACE) at 5, across a user /clear that re-asks the same thing; the user ends it with ^C.",
         model=SONNET, notes="session at line 76130; step 7's result also holds a second, empty reply (0 tokens received) that the user interrupted."),
    dict(AIDER, file="aider-claude35-20240813-1431.jsonl", label="loops", pattern="failure-loop", loop_start=2,
         why="Steps 2-4 are aider's automatic lint-fix reflections after a refactor: a no-match, an applied edit that still fails flake8, another no-match, and aider stops at 'Only 3 reflections allowed' with the lint errors unfixed.",
         model=SONNET, notes="session at line 63612; a short loop cut by the harness cap; the run is only 4 steps long."),
    # ---------------- aider: healthy
    dict(AIDER, file="aider-claude35-20240806-0855.jsonl", label="healthy", pattern="none", loop_start=None,
         why="The user re-asks one task (tests for --map-tokens) four times after /undo and /clear; the model's failed edits come at most two in a row (3-4, 7-8, 13) and each burst ends in an applied edit or a user reset.",
         model=SONNET, notes="session at line 2706; messy human-steered session, useful as a hard negative for failure-loop rules (9 SearchReplace/lint failures in 14 steps)."),
    dict(AIDER, file="aider-claude35-20240806-0847.jsonl", label="healthy", pattern="none", loop_start=None,
         why="Adds tests for subtree_only: edits, two lint-fix reflections, a /test run and fixes; every failure is fixed on the next try.",
         model=SONNET + "; switched to openrouter/anthropic/claude-3.5-sonnet at step 4",
         notes="session at line 1680; looks repetitive (lint errors at 2, 6, 8, 9) but each is a different error being fixed."),
    dict(AIDER, file="aider-claude35-20240812-2039.jsonl", label="healthy", pattern="none", loop_start=None,
         why="Adds an --analytics-disable option; one SEARCH mismatch is fixed on the next reply and lint errors are fixed once each.",
         model=SONNET, notes="session at line 50433."),
    dict(AIDER, file="aider-claude35-20240813-0536.jsonl", label="healthy", pattern="none", loop_start=None,
         why="/ask about refactoring base_coder.py, then two refactors; one no-match fixed at once; the last reply was interrupted by the user.",
         model=SONNET, notes="session at line 53614."),
    dict(AIDER, file="aider-claude35-20240809-1724.jsonl", label="healthy", pattern="none", loop_start=None,
         why="Adds a paginate parameter; two failed matches (3-4) then an applied edit (5); after an /undo one more mismatch and the model notices the change is already there.",
         model=SONNET, notes="session at line 24658; retries that succeed."),
    dict(AIDER, file="aider-claude35-20240822-0818.jsonl", label="healthy", pattern="none", loop_start=None,
         why="Small refactors of testsr.py; lint errors after most edits, each fixed by the next reply, ending clean.",
         model=SONNET, notes="session at line 99244; 5 of 6 steps carry 'lint errors' yet the work progresses (hard negative)."),
    dict(AIDER, file="aider-gpt4omini-20240809-1736.jsonl", label="healthy", pattern="none", loop_start=None,
         why="The user (testing aider) sends '/ask hi' 13 times; each time the model answers a short greeting, with varying wording; no tools, nothing to stop.",
         model="gpt-4o-mini (aider 0.48.2-dev, whole edit format, /ask mode)",
         notes="session at line 25886; text-only steps with identical inputs: a hard negative for same-text/canned-reply rules (the inputs do not change)."),
    dict(AIDER, file="aider-claude35-20240813-1342.jsonl", label="healthy", pattern="none", loop_start=None,
         why="24 turns building a Chart.js blame graph; the user undoes and re-asks often ('still 0!'), the model changes its approach each time and the charts get done.",
         model=SONNET, notes="session at line 61874; long human-steered run, no failed edits."),
    dict(AIDER, file="aider-claude35-20240814-0950.jsonl", label="healthy", pattern="none", loop_start=None,
         why="Questions about config-file tests, then a new test that the user re-runs with /run pytest after each fix until it passes, then verbose listing of config files.",
         model=SONNET, notes="session at line 66561; the same pytest command is re-run by the user three times (healthy test re-runs)."),
    dict(AIDER, file="aider-claude35-20240810-1442.jsonl", label="healthy", pattern="none", loop_start=None,
         why="Fixes failing tests reported by two /test runs; lint errors after steps 1 and 4 are each fixed by the next reply.",
         model=SONNET, notes="session at line 41127."),
    dict(AIDER, file="aider-claude35-20240809-1932.jsonl", label="healthy", pattern="none", loop_start=None,
         why="A chain of small requests (commit_before_message, cmd_diff, get_head helper and its uses); every edit applies.",
         model=SONNET, notes="session at line 28700."),
    dict(AIDER, file="aider-claude35-20240817-0619.jsonl", label="healthy", pattern="none", loop_start=None,
         why="Adds a repo-map cache, timing, --map-refresh and a /map-refresh command in 11 user turns; every edit applies.",
         model=SONNET, notes="session at line 75018."),
    # ---------------- OpenHands
    dict(OH_MSWE, file="openhands-llama4-ponyc-4593.jsonl", label="loops", pattern="failure-loop", loop_start=20,
         why="From step 20 the agent retries str_replace on command_parser.pony 10 times (steps 20-33, between a few views and one insert): 'old_str is required' or 'No replacement was performed' each time with slightly different old_str, until it gives up at 34.",
         notes="output.jsonl line 2; finishReason is 'stop' on every tool-calling step (OpenRouter); step 13 is a tool call OpenHands rejected before running it (meta.formatError)."),
    dict(OH_MSWE, file="openhands-llama4-ponyc-4588.jsonl", label="loops", pattern="failure-loop", loop_start=10,
         why="Steps 10-29: 12 failed str_replace calls (plus one call rejected before running) on match.c ('No replacement was performed', 'Multiple occurrences of old_str', 'old_str is required') with small variations, broken only by inserts; it escapes with sed at 30 and then fights the build until the 50-iteration limit.",
         notes="output.jsonl line 3; error 'RuntimeError: Agent reached maximum iteration in headless mode' (50/50). The build part (32-50) fails often but with different commands each time."),
    dict(OH_MSWE, file="openhands-llama4-ponyc-4595.jsonl", label="healthy", pattern="none", loop_start=None,
         why="Explores the parser, one failed str_replace fixed on the next try, then several different attempts to build/run ponyc (all fail: not built) and a finish.",
         notes="output.jsonl line 1; a failing run that keeps trying new things."),
    dict(OH_RES, file="openhands-resolver-darkmode.jsonl", label="loops", pattern="failure-loop", loop_start=5,
         why="Steps 5-12: eight edit_file_by_replace calls on App.tsx, each rejected by the harness linter ('Your proposed edit has introduced new syntax error(s)') while the model only apologises and tweaks the same code; it switches file at 13 and then finishes.",
         notes="output.jsonl line 2 (issue 'Add a toggle for dark mode'); steps 14-17 hold three more '[No exact match found' rejections before it succeeds; per-step cost from metrics.costs."),
    dict(harness="openhands", source_repo="nunu0404/Python_OpenHands", source_path="output.jsonl",
         source_commit="c80bab5aa35f16a396e3d8d2a4e1185d4d8ca42b", license="MIT", handwritten=False,
         file="openhands-gpt5-fastjson2-2775.jsonl", label="healthy", pattern="none", loop_start=None,
         model="gpt-5-2025-08-07 (CodeActAgent, function calling, max 50 iterations)",
         why="Finds JSON.parseObject, inserts an overload, runs the Maven build (fails twice on whitespace, then a long test run it waits on with an empty is_input command at 13), writes a repro, fixes its classpath and finishes.",
         notes="the repository's LICENSE puts everything outside enterprise/ under MIT; the run is the owner's own Multi-SWE-bench-style Java instance alibaba__fastjson2-2775; step 13 is a wait on a running command (polling), not a repeat."),
    dict(harness="openhands", source_repo="OpenHands/software-agent-sdk", source_path="tests/fixtures/llm_data/llm-logs/",
         source_commit="611629e6999ad398dc49c761721eefe18d5e6bd9", license="MIT", handwritten=False,
         file="openhands-sdk-claude4-hello.jsonl", label="healthy", pattern="none", loop_start=None,
         model="litellm_proxy/claude-sonnet-4-20250514 (OpenHands agent SDK v1, function calling)",
         why="Asked to create hello.py: the create fails (no /workspace), it lists the directory, a relative-path view is refused, the absolute view works, it runs the file and finishes.",
         notes="six LLM completion logs kept as a test fixture; two different failures each fixed on the next step; finishReason 'tool_calls' with exact usage, cost and latency per step."),
    # ---------------- ChatDev 1.0
    dict(CHATDEV, file="chatdev-timer.jsonl", label="loops", pattern="failure-loop", loop_start=21,
         source_path="WareHouse/timer_THUNLP_20230823091709/20230823091709.log",
         model="gpt-3.5-turbo (ChatDev 1.0 default; this log prints model_type None)",
         why="From step 21 the test phase runs five times with the identical report \"module 'os' has no attribute 'setsid'\" (ChatDev's own runner on Windows); the agents re-explain the error and the programmer re-sends main.py almost unchanged, so no code update happens until the last cycle.",
         notes="the error comes from the harness environment, not the generated code, so no code change could fix it; review and test cycles are scheduled by ChatDev (5 each)."),
    dict(CHATDEV, file="chatdev-backgroundremoval.jsonl", label="loops", pattern="failure-loop", loop_start=10,
         source_path="WareHouse/BackgroundRemoval_THUNLP_20231015220703/BackgroundRemoval_THUNLP_20231015220703.log",
         model="gpt-3.5-turbo (ModelType.GPT_3_5_TURBO in the log)",
         why="Steps 10-12: three test cycles with the same 'No module named cv2' report; each time the programmer answers with nearly the same text (similarity 0.96-0.99) in a FILENAME:/LANGUAGE: layout that ChatDev does not apply, so nothing changes.",
         notes="short loop (3 cycles, ChatDev's cap)."),
    dict(CHATDEV, file="chatdev-poker1.jsonl", label="loops", pattern="failure-loop", loop_start=13,
         source_path="WareHouse/Poker1_DefaultOrganization_20231006035628/Poker1_DefaultOrganization_20231006035628.log",
         model="gpt-3.5-turbo (ModelType.GPT_3_5_TURBO in the log)",
         why="Steps 13-18: three test cycles with the same AttributeError ('AIPlayer' object has no attribute 'set_blind'); the summaries repeat the diagnosis and the fixes are never applied (no code update), until ChatDev moves on.",
         notes="steps 4-5 also re-send player.py twice during CodeComplete."),
    dict(CHATDEV, file="chatdev-qrcodegenerator.jsonl", label="healthy", pattern="none", loop_start=None,
         source_path="WareHouse/QRCodeGenerator_THUNLP_20231015214731/QRCodeGenerator_THUNLP_20231015214731.log",
         model="gpt-3.5-turbo (ModelType.GPT_3_5_TURBO in the log)",
         why="Demand, language, code, three review rounds that each change the code, one test fix after 'No module named qrcode' (ChatDev installs it) and the software runs; then docs and manual.",
         notes="the scheduled review/test cycles look repetitive but each round changes something."),
    # ---------------- SWE-agent
    dict(SWE, file="sweagent-gpt4-pydicom-1458.jsonl", label="healthy", pattern="none", loop_start=None,
         source_path="tests/test_data/trajectories/gpt4__swe-bench-dev-easy_first_only__default__t-0.00__p-0.95__c-3.00__install-1/pydicom__pydicom-1458.traj",
         why="Reproduces, opens the handler, then three edits rejected by SWE-agent's syntax check (6: unmatched ']'; 7 and 8: the same edit twice, unmatched ')'); the fourth (9) applies; re-runs the repro, cleans up, submits.",
         notes="model_stats: 12 api calls, $1.27; retries that succeed (a failure-loop rule with K=3 would stop it one step too early)."),
    dict(SWE, file="sweagent-gpt4-testrepo-6e44b9.jsonl", label="healthy", pattern="none", loop_start=None,
         source_path="tests/test_data/trajectories/gpt4__swe-agent-test-repo__default_from_url__t-0.00__p-0.95__c-3.00__install-1/6e44b9__sweagenttestrepo-1c2844.traj",
         why="find_file, open, one edit that adds the missing colon, run, submit.",
         notes="model_stats: 5 api calls; a different run from the existing sweagent-test-repo-i1 (other edit command and other commit)."),
    # ---------------- Moatless
    dict(MOAT, file="moatless-sklearn-13779.jsonl", label="loops", pattern="cycle", loop_start=6,
         why="After one applied edit, the planner asks again for nearly the same change (6, 10, 13, 16); each time the editor returns the unchanged code, Moatless answers 'retry' (same as the search) and the editor rejects; steps 10-12, 13-15 and 16-18 are identical until the cost limit aborts the run.",
         notes="info.error: 'The loop was aborted because the cost exceeded the limit'; total_cost $0.52; SWE-bench Verified run 20240818_moatless_verified kept as a test fixture."),
]


def sig(step):
    return json.dumps([(c.get("name"), c.get("args")) for c in step.get("toolCalls") or []], sort_keys=True)


def stats(steps):
    n = len(steps)
    calls = sum(len(s.get("toolCalls") or []) for s in steps)

    def run_max(items):  # items: list of (index1, key) ; longest run of equal keys
        best = (0, None)
        cur = 0
        start = None
        prev = object()
        for i, k in items:
            if k == prev:
                cur += 1
            else:
                cur = 1
                start = i
            prev = k
            if cur > best[0]:
                best = (cur, start)
        return {"length": best[0], "start": best[1]}

    tool_items = [(i + 1, sig(s) if s.get("toolCalls") else ("text", i)) for i, s in enumerate(steps)]
    a = run_max(tool_items) if steps else {"length": 0, "start": None}
    b = run_max([(i + 1, sig(s)) for i, s in enumerate(steps) if s.get("toolCalls")]) if calls else {"length": 0, "start": None}
    t = run_max([(i + 1, "T" if not s.get("toolCalls") else ("C", i)) for i, s in enumerate(steps)])
    if t["length"] == 1 and all(s.get("toolCalls") for s in steps):
        t = {"length": 0, "start": None}
    full = run_max([(i + 1, json.dumps(s, sort_keys=True)) for i, s in enumerate(steps)])["length"] if steps else 0
    sigs = [sig(s) for s in steps]
    cyc = None
    for p in (2, 3, 4):
        for st in range(n):
            j = st + p
            while j < n and sigs[j] == sigs[j - p]:
                j += 1
            length = j - st
            if length >= 2 * p and len(set(sigs[st:st + p])) > 1:
                if cyc is None or length > cyc["length"]:
                    cyc = {"period": p, "start": st + 1, "length": length, "repetitions": round(length / p, 2)}
    return {"steps": n, "toolCalls": calls, "maxIdenticalConsecutiveToolStep": a,
            "maxIdenticalToolCallRunIgnoringTextOnlySteps": b, "longestCycle": cyc,
            "maxTextOnlyStreak": t, "maxIdenticalFullStepRun": full}


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    out = []
    for r in RUNS:
        path = os.path.join(here, "..", "..", r["file"])  # testdata/traces
        steps = [json.loads(l) for l in open(path)]
        e = {"file": r["file"], "harness": r["harness"], "source_repo": r["source_repo"],
             "source_path": r["source_path"], "source_commit": r["source_commit"], "license": r["license"],
             "steps": len(steps), "label": r["label"], "why": r["why"], "loop_start": r["loop_start"],
             "pattern": r["pattern"], "stats": stats(steps), "model": r["model"],
             "handwritten": r["handwritten"], "notes": r["notes"]}
        out.append(e)
    print(json.dumps(out, indent=1, ensure_ascii=False))


if __name__ == "__main__":
    main()
