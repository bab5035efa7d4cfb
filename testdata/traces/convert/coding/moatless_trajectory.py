#!/usr/bin/env python3
"""Convert a Moatless Tools trajectory.json (state machine "transitions", each with "actions") to
loopguard steps.

Rerun:
  git --git-dir=/work/.mirror/aorwall+moatless-tree-search/repo show \
      bc66ea64e3fe96cf3c90f197b4bab9aaa15e1eb9:tests/benchmark/data/scikit-learn__scikit-learn-13779/trajectory.json \
    | python3 testdata/traces/convert/coding/moatless_trajectory.py > testdata/traces/moatless-sklearn-13779.jsonl

One step = one action of a transition = one model call. Moatless asks the model for a structured
action whose kind is the state's name (SearchCode, IdentifyCode, DecideRelevance, PlanToCode,
EditCode, ...), so name = the state's name and args = the request without its "scratch_pad"
(which is the step's text). EditCode answers in free text (<replace>/<reject> tags): its args are
{"command": that text}. result = the harness's response to the action (trigger, output or
retry_message) as JSON text. Moatless marks an action it refuses and asks the model to redo with
trigger "retry" -> error "retry". usage from the action's "completion" when recorded.
"""
import json
import sys

CUT_OVER = 16 * 1024


def cut(s):
    if s is None:
        return s
    b = s.encode("utf-8")
    if len(b) <= CUT_OVER:
        return s
    head = b[:8192].decode("utf-8", "ignore")
    tail = b[-4096:].decode("utf-8", "ignore")
    return head + "...[%d bytes cut]..." % (len(b) - 8192 - 4096) + tail


def main():
    d = json.load(sys.stdin)
    for t in d.get("transitions", []):
        name = t.get("name")
        for a in t.get("actions") or []:
            req = dict(a.get("request") or {})
            text = req.pop("scratch_pad", "") or ""
            if set(req) == {"content"}:
                args = {"command": req["content"]}
            else:
                args = req
            resp = a.get("response")
            call = {"name": name, "args": args,
                    "result": cut(json.dumps(resp, ensure_ascii=False)) if resp is not None else None,
                    "error": "retry" if isinstance(resp, dict) and resp.get("trigger") == "retry" else None}
            step = {"text": text, "toolCalls": [call]}
            c = a.get("completion") or {}
            u = c.get("usage") or {}
            if u:
                usage = {"inputTokens": u.get("prompt_tokens"), "outputTokens": u.get("completion_tokens")}
                if u.get("completion_cost") is not None:
                    usage["costUsd"] = u.get("completion_cost")
                step["usage"] = usage
            meta = {"transition": t.get("id")}
            if c.get("model"):
                meta["model"] = c.get("model")
            step["meta"] = meta
            print(json.dumps(step, ensure_ascii=False))
    info = d.get("info") or {}
    print(json.dumps({k: info.get(k) for k in ("status", "total_cost", "duration")}), file=sys.stderr)
    if info.get("error"):
        print(info["error"].strip().splitlines()[-1], file=sys.stderr)


if __name__ == "__main__":
    main()
