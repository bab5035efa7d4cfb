#!/usr/bin/env python3
"""Convert a mini-swe-agent v2 trajectory (trajectory_format "mini-swe-agent-1.1", toolcall models:
messages system, user, then assistant {content, tool_calls, reasoning_content?} / tool {content,
tool_call_id, extra.returncode}, and a final {"role": "exit"}) to loopguard steps.

Rerun (bare snapshot of SWE-agent/mini-swe-agent; the commit is a pull-request commit that holds
DeepSeek evaluation artifacts under output/):
  git --git-dir=/work/.mirror/SWE-agent+mini-swe-agent/repo show \
      ec0e8e849fea5b1619deb1753007201000904672:output/DIR/ID/ID.traj.json \
    | python3 convert/mini_toolcall_traj.py > runs/NAME.jsonl

Same conventions as testdata/traces/convert/coding2/mini_traj.py (the v1 text-action format):
- one step per assistant message; text = its content (for deepseek-reasoner, whose content is
  often empty, the reasoning_content is used instead);
- each tool call -> a call named by the command's first word (as the corpus's mini runs are),
  args {"command"}; result = the tool message with the same tool_call_id (the harness's
  "<returncode>N</returncode><output>...</output>" rendering); returncode other than 0 ->
  error "exit code N"; a timeout message -> error "timeout";
- the submission call (COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT) has no tool message: its result is
  the exit message's content (the submitted patch);
- a user message between turns (a format error or other harness message) goes to meta.formatError
  of the step before it, if any appear.
Results over 16 KB keep their first 8 KB and last 4 KB.
"""
import json
import os
import re
import sys

# The corpus converter of mini-swe-agent's earlier format clips results and
# reads message contents the same way.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "coding2"))
from mini_traj import clip, content  # noqa: E402


def main():
    d = json.load(sys.stdin)
    msgs = d["messages"]
    tools = {m.get("tool_call_id"): m for m in msgs if m["role"] == "tool"}
    exit_msg = next((m for m in msgs if m["role"] == "exit"), None)
    steps = []
    seen_assistant = False
    for m in msgs:
        if m["role"] == "user" and seen_assistant and steps:
            steps[-1].setdefault("meta", {})["formatError"] = content(m)
            continue
        if m["role"] != "assistant":
            continue
        seen_assistant = True
        text = content(m).strip()
        if not text:
            text = (m.get("reasoning_content") or "").strip()
        step = {"text": text, "toolCalls": []}
        for tc in m.get("tool_calls") or []:
            try:
                args = json.loads(tc["function"]["arguments"])
            except Exception:
                args = {"raw": tc["function"].get("arguments")}
            cmd = args.get("command", "") if isinstance(args, dict) else ""
            words = cmd.split()
            call = {"name": words[0] if words else tc["function"].get("name", ""), "args": {"command": cmd}}
            t = tools.get(tc.get("id"))
            if t is not None:
                res = content(t)
                call["result"] = clip(res)
                rc = (t.get("extra") or {}).get("returncode")
                mrc = re.match(r"\s*<returncode>(-?\d+)</returncode>", res)
                if rc is None and mrc:
                    rc = int(mrc.group(1))
                if rc not in (None, 0, "0"):
                    call["error"] = "exit code %s" % rc
                elif "timed out" in res[:2000] and res.startswith("The last command"):
                    call["error"] = "timeout"
            elif "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT" in cmd and exit_msg is not None:
                call["result"] = clip(content(exit_msg))
            step["toolCalls"].append(call)
        steps.append(step)
    for s in steps:
        print(json.dumps(s, ensure_ascii=False))
    info = d.get("info") or {}
    print(json.dumps({"exit_status": info.get("exit_status"), "model": ((info.get("config") or {}).get("model") or {}).get("model_name"), "model_stats": info.get("model_stats")}), file=sys.stderr)


if __name__ == "__main__":
    main()
