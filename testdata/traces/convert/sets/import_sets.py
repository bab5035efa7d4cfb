#!/usr/bin/env python3
"""Bring the labelled runs of set A and set B (../shared/traces/set-a, set-b) into testdata/traces.

    python3 testdata/traces/convert/sets/import_sets.py [SHARED_TRACES_DIR]   (default /work/shared/traces)

It copies each run that is not already in the corpus under another name, moving the converters'
annotations (`formatError`) under "meta" as commit 9ee1027 did for the first runs (the rest of the
line is kept byte for byte), and prints the runs' MANIFEST.json entries in the corpus's schema on
stdout. The labels, whys and models are the sets' own, written by their labellers before any
detector ran; the only reading done here is set A's loop starts (set A records none), in LOOP_START.
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
TRACES = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(HERE, "..", "frameworks"))
from stats import stats  # noqa: E402

SRC = sys.argv[1] if len(sys.argv) > 1 else "/work/shared/traces"

# The same source run is already in the corpus (converted by our converters, labelled by our
# reading): keep it once. Disagreements between the two readings are listed in NOTES.md.
ALREADY = {
    "sweagent-pydicom-1458.jsonl": "sweagent-gpt4-pydicom-1458.jsonl",
    "taubench-airline-task09-trial2.jsonl": "taubench-airline-gpt4o-t09-r2.jsonl",
    "openhands-llama4maverick-ponyc-4588.jsonl": "openhands-llama4-ponyc-4588.jsonl",
    "openhands-llama4maverick-ponyc-4593.jsonl": "openhands-llama4-ponyc-4593.jsonl",
    "openhands-llama4maverick-ponyc-4595.jsonl": "openhands-llama4-ponyc-4595.jsonl",
    "openhands-resolver-prviewer-1.jsonl": "openhands-resolver-darkmode.jsonl",
    "sweagent-gpt4o-testrepo-6e44b9.jsonl": "sweagent-gpt4-testrepo-6e44b9.jsonl",
    "autogen-gpt4turbo-function-call-code-writing.jsonl": "autogen-fastapi-engineer-gpt4.jsonl",
    "tau2-airline-whissle-task04.jsonl": "tau2-airline-whissle-task4.jsonl",
    "tau2-airline-whissle-task21.jsonl": "tau2-airline-whissle-task21.jsonl",
    "tau2-airline-whissle-task23.jsonl": "tau2-airline-whissle-task23.jsonl",
    "toolbench-dfsdt-chatgpt-g2-q119.jsonl": "toolbench-dfsdt-G2-119.jsonl",
    "toolbench-dfsdt-chatgpt-g2-q52.jsonl": "toolbench-dfsdt-G2-52.jsonl",
    "toolbench-dfsdt-chatgpt-g3-q15.jsonl": "toolbench-dfsdt-G3-15.jsonl",
    "toolbench-dfsdt-chatgpt-g3-q3.jsonl": "toolbench-dfsdt-G3-3.jsonl",
    "toolbench-dfsdt-chatgpt-g3-q8.jsonl": "toolbench-dfsdt-G3-8.jsonl",
}
for q in (1707, 3033, 3522, 3750, 5074, 5376, 6055, 6837, 802):
    ALREADY["react-fever-q%d.jsonl" % q] = "react-fever-q%d.jsonl" % q

# Set A's loop starts, set by reading each run: the first step of the repeated unit.
LOOP_START = {
    "sweagent-ctf-eps.jsonl": 10,  # step 10 is the first `submit flag{...}`; 11-13 repeat it
    "reflexion-hotpotqa-t1-a100.jsonl": 2,  # steps 2-6: the same thought, search and answer
    "reflexion-hotpotqa-t1-a093.jsonl": 4,  # steps 4-6: the same search of the list page
    "react-webshop-ep045.jsonl": 4,  # the thought of step 4 and the invalid click of 5, 5 times
    "react-webshop-ep105.jsonl": 3,  # steps 3-6 (click, thought, < Prev, thought) come back twice
}

# The corpus's names for set A's patterns (as for the first 20 runs, which keep pattern_original).
PATTERN_A = {"identical-action-run": "identical-call-run", "same-tool-different-args": "none", "long-run": "none"}

# Set B records no pattern: named here from its whys.
PATTERN_B = {
    "toolbench-dfsdt-chatgpt-g3-q13.jsonl": "identical-call-run",
    "langchain-react-gpt35-max-iterations-jester.jsonl": "identical-call-run",
    "autogen-gpt4-chess-player-white.jsonl": "polling",
    "aider-deepseekr1-agent-aider-worktree-add-tests.jsonl": "failure-loop",
}

HARNESS_B = {
    "OpenHands": "openhands", "Claude Code": "claude-code", "ReAct": "react", "ToolBench": "toolbench-dfsdt",
    "LangChain": "langchain", "AutoGen": "autogen", "Aider": "aider", "tau2-bench": "tau2-bench",
    "AgentBench": "agentbench",
}
HARNESS_A = {"sweagent": "swe-agent", "mini": "mini-swe-agent", "taubench": "tau-bench", "reflexion": "reflexion",
             "react": "react"}


def move_annotations(line):
    """Moves formatError under "meta", keeping the rest of the line as it was."""
    key = '"formatError": '
    i = line.find(key)
    if i < 0:
        return line
    _, end = json.JSONDecoder().raw_decode(line, i + len(key))
    out = line[:i] + '"meta": {' + line[i:end] + '}' + line[end:]
    a, b = json.loads(line), json.loads(out)
    a["meta"] = {"formatError": a.pop("formatError")}
    assert a == b, line[:80]
    return out


def main():
    existing = {e["file"] for e in json.load(open(os.path.join(TRACES, "MANIFEST.json")))}
    entries = []
    for name in ("set-a", "set-b"):
        for e in json.load(open(os.path.join(SRC, name, "MANIFEST.json"))):
            f = e["file"]
            if f in ALREADY:
                assert ALREADY[f] in existing, f
                continue
            assert f not in existing, f
            with open(os.path.join(SRC, name, f)) as r:
                lines = [move_annotations(l) for l in r]
            with open(os.path.join(TRACES, f), "w") as w:
                w.writelines(lines)
            steps = [json.loads(l) for l in lines]
            assert len(steps) == e["steps"], f
            out = {"file": f}
            if name == "set-a":
                out["harness"] = HARNESS_A[f.split("-")[0]]
            else:
                out["harness"] = next(v for k, v in HARNESS_B.items() if e["harness"].startswith(k))
            for k in ("source_repo", "source_path", "source_commit", "source_ref", "license", "steps", "label", "why"):
                if k in e:
                    out[k] = e[k]
            if name == "set-a":
                out["loop_start"] = LOOP_START.get(f) if e["label"] == "loops" else None
                assert e["label"] != "loops" or out["loop_start"], f
                out["pattern"] = PATTERN_A.get(e["pattern"], e["pattern"])
                out["pattern_original"] = e["pattern"]
                out["stats"] = e["stats"]
            else:
                out["loop_start"] = e.get("loop_start_step") if e["label"] == "loops" else None
                out["pattern"] = PATTERN_B.get(f, "none")
                out["stats"] = stats(steps)
            out["model"] = e["model"]
            # SWE-agent's CTF demonstrations: model_stats all zero, typos that read hand-written.
            out["handwritten"] = f.startswith("sweagent-ctf-")
            notes = [e["notes"]] if e.get("notes") else []
            if name == "set-b":
                notes.append("Harness: " + e["harness"] + ".")
                if e["label"] == "unclear" and e.get("loop_start_step"):
                    notes.append("The questionable segment starts at step %d." % e["loop_start_step"])
            notes.append("From %s (../shared/traces/%s), labelled there by reading the run." % (name, name))
            out["notes"] = " ".join(notes)
            for k in ("exit_status", "resolved", "reward", "outcome", "score", "question"):
                if k in e:
                    out[k] = e[k]
            out["converter"] = "convert/sets"
            entries.append(out)
    json.dump(entries, sys.stdout, indent=1, ensure_ascii=False)
    print()


main()
