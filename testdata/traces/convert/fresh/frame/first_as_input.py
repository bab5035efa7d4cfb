#!/usr/bin/env python3
"""The first message of an AutoGen 0.2 group chat started with initiate_chat(message=TASK) is the
task text written in the notebook, printed under the initiating agent's name: it is not a model
turn. This moves it to the `input` of the next step (the first model turn)."""
import json, sys
steps = [json.loads(l) for l in sys.stdin if l.strip()]
first = steps.pop(0)
assert not first["toolCalls"]
steps[0]["input"] = (first.get("input", "") + "\n\n" if first.get("input") else "") + first["text"]
steps[0] = {k: steps[0][k] for k in ("text", "toolCalls", "input", "meta") if k in steps[0]} | {k: v for k, v in steps[0].items() if k not in ("text", "toolCalls", "input", "meta")}
for s in steps:
    print(json.dumps(s, ensure_ascii=False))
