#!/usr/bin/env python3
"""For a LangGraph stream printed with subgraphs=True, the parent graph's update (which carries the
user's HumanMessage) is printed after the subgraph chunks of the first agent, so langgraph_stream.py
puts the task on a later step. The task was the stream's input (graph.stream({"messages": [("user",
TASK)]})), seen by the first model call: this moves the first `input` to step 1 (only when step 1
has none)."""
import json, sys
steps = [json.loads(l) for l in sys.stdin if l.strip()]
if not steps[0].get("input"):
    for s in steps:
        if s.get("input"):
            task = s.pop("input")
            steps[0] = {"text": steps[0]["text"], "toolCalls": steps[0]["toolCalls"], "input": task,
                        **{k: v for k, v in steps[0].items() if k not in ("text", "toolCalls", "input")}}
            break
for s in steps:
    print(json.dumps(s, ensure_ascii=False))
