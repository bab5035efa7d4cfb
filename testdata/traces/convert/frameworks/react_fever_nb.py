#!/usr/bin/env python3
"""Convert one episode of the ReAct FEVER notebook output into loopguard steps.

Source: ysymyth/ReAct, FEVER.ipynb, output of cell 5 (`webthink` over 500 shuffled dev claims,
text-davinci-002, at most 7 Thought/Action/Observation rounds per claim).

Rerun:
  git --git-dir=/work/.mirror/ysymyth+ReAct/repo show \
      6bdb3a1fd38b8188fc7ba4102969fe483df8fdc9:FEVER.ipynb \
    | python3 testdata/traces/convert/frameworks/react_fever_nb.py QUESTION_IDX > testdata/traces/react-fever-qQUESTION_IDX.jsonl

One step per Thought/Action round (one model call; when the model's first output had no
"Action i:" line the notebook printed "ohh..." and asked again for the action alone: that round is
still one step, marked meta.formatError). Tool name = the action verb (Search, Lookup, Finish),
args = {"command": action text as the model wrote it}. The harness's "Invalid action: ..."
observation is the only failure it marks: error = "invalid action". The final forced
`finish[]` that the notebook sends after round 7 is not a model step and is left out.
"""
import json
import re
import sys


def main():
    idx = sys.argv[1]
    nb = json.load(sys.stdin)
    out = "".join("".join(o.get("text", "")) for o in nb["cells"][5]["outputs"])
    for ep in out.split("-----------\n"):
        if re.search(r"^%s Claim: " % re.escape(idx), ep, re.M):
            break
    else:
        sys.exit("episode %s not found" % idx)
    # rounds: "Thought i: ...\nAction i: ...\nObservation i: ...\n"
    pat = re.compile(
        r"^Thought (\d+): (.*?)\nAction \1: (.*?)\nObservation \1: (.*?)\n(?=\nThought \d+: |\nohh\.\.\.|\n\{'steps')",
        re.M | re.S,
    )
    rounds = list(pat.finditer(ep))
    # "ohh..." marks a round whose first model output had no Action line
    ohh_rounds = set()
    for m in re.finditer(r"^ohh\.\.\.", ep, re.M):
        nxt = pat.search(ep, m.end())
        if nxt:
            ohh_rounds.add(nxt.group(1))
    for m in rounds:
        i, thought, action, obs = m.groups()
        vm = re.match(r"\s*([A-Za-z]+)\[", action)
        name = vm.group(1) if vm else (action.split() or ["(empty)"])[0]
        call = {"name": name, "args": {"command": action}, "result": obs}
        if obs.startswith("Invalid action: "):
            call["error"] = "invalid action"
        step = {"text": thought, "toolCalls": [call]}
        if i in ohh_rounds:
            step["meta"] = {"formatError": True, "note": "first model output had no Action line; the harness asked again for the action"}
        sys.stdout.write(json.dumps(step, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
