"""Convert one entry of tau-bench's historical_trajectories/*.json into loopguard steps.

Rerun (the mirror is a bare repo; build.sh does this for every kept entry):
  git -C /work/.mirror/sierra-research+tau-bench/repo show \
    59a200c6d575d595120f1cb70fea53cef0632f6b:historical_trajectories/gpt-4o-airline.json \
    | python3 testdata/traces/convert/tool-use/taubench_hist.py TASK_ID TRIAL > testdata/traces/taubench-airline-gpt4o-tTT-rR.jsonl

Format: a list of {task_id, trial, reward, info, traj}; traj is an OpenAI chat log
(system, user, assistant with tool_calls, tool). One step per assistant message.
"input" = the user message(s) that arrived since the previous assistant message.
A tool result that tau-bench's env produced from a caught exception ("Error: ...",
written by the harness in Env.step) gets "error": "error observation".
"""
import json
import sys

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from common import clip, parse_args, dump  # noqa: E402


def convert(entry):
    steps = []
    pending_user = []
    by_id = {}
    for m in entry["traj"]:
        role = m["role"]
        if role == "system":
            continue
        if role == "user":
            pending_user.append(m.get("content") or "")
        elif role == "assistant":
            step = {"text": m.get("content") or "", "toolCalls": []}
            meta = {}
            for c in m.get("tool_calls") or []:
                args, bad = parse_args(c["function"].get("arguments"))
                call = {"name": c["function"]["name"], "args": args}
                if bad:
                    meta["formatError"] = True
                step["toolCalls"].append(call)
                by_id[c.get("id")] = call
            if pending_user:
                step["input"] = "\n".join(pending_user)
                pending_user = []
            if meta:
                step["meta"] = meta
            steps.append(step)
        elif role == "tool":
            call = by_id.get(m.get("tool_call_id"))
            if call is None:
                continue
            res = m.get("content")
            call["result"] = clip(res)
            if isinstance(res, str) and res.startswith("Error: "):
                call["error"] = "error observation"
    if pending_user and steps:
        steps[-1].setdefault("meta", {})["finalUserMessage"] = "\n".join(pending_user)
    return steps


def main():
    task, trial = int(sys.argv[1]), int(sys.argv[2])
    data = json.load(sys.stdin)
    for e in data:
        if e["task_id"] == task and e["trial"] == trial:
            dump(convert(e), sys.stdout)
            return
    sys.exit("no entry task_id=%d trial=%d" % (task, trial))


if __name__ == "__main__":
    main()
