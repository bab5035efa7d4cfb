#!/usr/bin/env python3
"""Post-process agentchat_console.py output for a SelectorGroupChat whose participants are not
model agents (the custom-agents notebook's ArithmeticAgents compute x+1, x*2, ... in Python):
the only model turns are the selector's (GPT-4o picks the next speaker). Each participant message
becomes one step of the selector: text "", one call `select_speaker` {"speaker": NAME} whose result
is the message the chosen agent produced; meta.speaker = "selector". Inputs stay on their step."""
import json, sys
for l in sys.stdin:
    s = json.loads(l)
    if s["toolCalls"]:
        raise SystemExit("participant made a tool call: not a selector-only run")
    out = {"text": "", "toolCalls": [{"name": "select_speaker", "args": {"speaker": s["meta"]["speaker"]}, "result": s["text"]}]}
    if s.get("input"):
        out["input"] = s["input"]
    out["meta"] = {"speaker": "selector"}
    print(json.dumps(out, ensure_ascii=False))
