"""Convert one simulation of a tau2-bench results file into loopguard steps.

Rerun (the mirror is a bare repo):
  git -C /work/.mirror/sierra-research+tau2-bench/repo show COMMIT:PATH \
    | python3 testdata/traces/convert/tool-use/tau2_results.py INDEX > testdata/traces/NAME.jsonl
  INDEX is the 0-based position in "simulations" (the manifest notes give it
  together with task_id).

Format: {"info", "tasks", "simulations": [{"task_id", "termination_reason",
"messages": [...]}]}. Messages have role assistant / user / tool; assistant
messages carry tool_calls [{id, name, arguments (object)}], usage
{prompt_tokens, completion_tokens}, cost, raw_data.finish_reason, errors.
One step per assistant message, except tau2's fixed opening greeting (turn 0,
"Hi! How can I help you today?", written by the orchestrator, not a model),
which is dropped. "input" = the user's text message(s) since the previous
assistant message (the user simulator's own tool calls, telecom domain, are
not agent steps and are counted in meta.userToolCalls). tau2's "errors" on an
assistant message (invalid attempts it rejected and retried) go to
meta.rejectedAttempts; an assistant message that is still empty gets
meta.formatError. A tool message with
"error": true gets "error": "error flag" and keeps its content in "result".
"""
import json
import sys

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from common import clip, dump  # noqa: E402

GREETING = "Hi! How can I help you today?"


def convert(sim):
    steps = []
    pending_user = []
    user_tool_calls = 0
    by_id = {}
    msgs = sim["messages"]
    for i, m in enumerate(msgs):
        role = m["role"]
        if role == "assistant":
            if (i == 0 and m.get("content") == GREETING and not m.get("tool_calls")
                    and m.get("usage") is None):
                continue
            step = {"text": m.get("content") or "", "toolCalls": []}
            for c in m.get("tool_calls") or []:
                args = c.get("arguments")
                if not isinstance(args, dict):
                    args = {"_raw": args}
                call = {"name": c["name"], "args": args}
                step["toolCalls"].append(call)
                by_id[c.get("id")] = call
            raw = m.get("raw_data") or {}
            if isinstance(raw, dict) and raw.get("finish_reason"):
                step["finishReason"] = raw["finish_reason"]
            u = m.get("usage")
            if u:
                usage = {}
                if u.get("prompt_tokens") is not None:
                    usage["inputTokens"] = u["prompt_tokens"]
                if u.get("completion_tokens") is not None:
                    usage["outputTokens"] = u["completion_tokens"]
                if u.get("total_tokens") is not None:
                    usage["totalTokens"] = u["total_tokens"]
                if m.get("cost"):
                    usage["costUsd"] = m["cost"]
                if m.get("generation_time_seconds"):
                    usage["durationMs"] = round(m["generation_time_seconds"] * 1000)
                if usage:
                    step["usage"] = usage
            if pending_user:
                step["input"] = "\n".join(pending_user)
                pending_user = []
            meta = {}
            if user_tool_calls:
                meta["userToolCalls"] = user_tool_calls
                user_tool_calls = 0
            if m.get("errors"):
                # tau2 records here the invalid attempts it rejected (e.g. an
                # empty message) before this one; the step itself is only a
                # format error when it is still empty.
                meta["rejectedAttempts"] = m["errors"]
                if not step["text"] and not step["toolCalls"]:
                    meta["formatError"] = True
            if meta:
                step["meta"] = meta
            steps.append(step)
        elif role == "user":
            if m.get("tool_calls"):
                user_tool_calls += len(m["tool_calls"])
            if m.get("content"):
                pending_user.append(m["content"])
        elif role == "tool":
            if m.get("requestor") == "user":
                continue
            call = by_id.get(m.get("id"))
            if call is None:
                continue
            call["result"] = clip(m.get("content"))
            if m.get("error"):
                call["error"] = "error flag"
    if pending_user and steps:
        steps[-1].setdefault("meta", {})["finalUserMessage"] = "\n".join(pending_user)
    return steps


def main():
    idx = int(sys.argv[1])
    data = json.load(sys.stdin)
    dump(convert(data["simulations"][idx]), sys.stdout)


if __name__ == "__main__":
    main()
