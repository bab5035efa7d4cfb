#!/usr/bin/env python3
"""Convert an OpenHands (agent SDK) run recorded as LLM completion logs (one JSON file per model
call, each with the full "messages" sent and the "response") to loopguard steps.

Rerun:
  python3 testdata/traces/convert/coding/openhands_llm_logs.py /work/.mirror/OpenHands+software-agent-sdk/repo \
      611629e6999ad398dc49c761721eefe18d5e6bd9 tests/fixtures/llm_data/llm-logs \
      > testdata/traces/openhands-sdk-claude4-hello.jsonl

The calls are ordered by the timestamp in their file names. The last call's "messages" hold the
whole conversation; each assistant message there (and the last call's response) is one step:
text = its text content, toolCalls = its tool_calls (name and parsed JSON arguments as called),
result = the "tool" message answering that call id. finishReason and usage come from the log of
the call that produced the step (call k produced the k-th assistant message). OpenHands marks a
failed tool only in the text here, so no "error" is set.
"""
import json
import subprocess
import sys


def text_of(content):
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(c.get("text", "") for c in content if isinstance(c, dict) and c.get("type") == "text")
    return ""


def main():
    gitdir, commit, folder = sys.argv[1:4]
    names = subprocess.run(["git", "--git-dir=" + gitdir,
                            "ls-tree", "--name-only", commit, folder + "/"], capture_output=True, text=True, check=True).stdout.split()
    names = sorted(n for n in names if n.endswith(".json"))
    logs = []
    for n in names:
        raw = subprocess.run(["git", "--git-dir=" + gitdir, "show", commit + ":" + n], capture_output=True, text=True, check=True).stdout
        logs.append(json.loads(raw))
    last = logs[-1]
    msgs = list(last["messages"]) + [last["response"]["choices"][0]["message"]]
    results = {m.get("tool_call_id"): text_of(m.get("content")) for m in msgs if m.get("role") == "tool"}
    k = 0
    pending_user = []
    for m in msgs:
        role = m.get("role")
        if role == "user":
            pending_user.append(text_of(m.get("content")))
            continue
        if role != "assistant":
            continue
        calls = []
        for tc in m.get("tool_calls") or []:
            raw = tc["function"]["arguments"]
            try:
                args = json.loads(raw)
            except Exception:
                args = {"_raw": raw}
            calls.append({"name": tc["function"]["name"], "args": args, "result": results.get(tc.get("id"))})
        step = {"text": text_of(m.get("content")), "toolCalls": calls}
        if k < len(logs):
            resp = logs[k]["response"]
            fr = resp["choices"][0].get("finish_reason")
            if fr:
                step["finishReason"] = fr
            u = resp.get("usage") or {}
            step["usage"] = {"inputTokens": u.get("prompt_tokens"), "outputTokens": u.get("completion_tokens"),
                             "totalTokens": u.get("total_tokens")}
            if logs[k].get("cost") is not None:
                step["usage"]["costUsd"] = logs[k]["cost"]
            if logs[k].get("latency_sec") is not None:
                step["usage"]["durationMs"] = int(round(logs[k]["latency_sec"] * 1000))
        if pending_user:
            step["input"] = "\n\n".join(pending_user)
            pending_user = []
        k += 1
        print(json.dumps(step, ensure_ascii=False))


if __name__ == "__main__":
    main()
