#!/usr/bin/env python3
"""Convert one OpenHands (CodeActAgent) evaluation output line to loopguard steps.

Rerun:
  git --git-dir=/work/.mirror/OpenHands+OpenHands/repo show \
      3d22520992ea4a65c183376e8568bad6d4dedeec:evaluation/benchmarks/multi_swe_bench/examples/output.jsonl \
    | python3 testdata/traces/convert/coding/openhands_history.py --line 3 > testdata/traces/openhands-llama4-ponyc-4588.jsonl
  git --git-dir=/work/.mirror/OpenHands+OpenHands/repo show \
      ca424ec15d3348618da32bb6b974f3e6fa2e9073:tests/unit/resolver/mock_output/output.jsonl \
    | python3 testdata/traces/convert/coding/openhands_history.py --line 2 > testdata/traces/openhands-resolver-darkmode.jsonl
(--line N = 1-based line of the output.jsonl; each line is one run with its "history" of events.)

Two history formats are handled:
- v0.3x (function calling): agent actions carry tool_call_metadata with the model_response.
  One step = one model response (actions grouped by model_response.id); text = the response's
  message content; toolCalls = its tool_calls, name and args as called (arguments parsed from
  JSON); finishReason and usage from the response; result = the observation whose "cause" is the
  action's id. An "error" observation with no action (a tool call OpenHands rejected before
  running it) is a step with no tool call and meta.formatError. An agent "message" action is a
  text-only step; the user's messages become the next step's "input".
- 2024 flat format (CodeAct text actions, <execute_bash>/<execute_ipython>): one action per step,
  name = execute_bash / execute_ipython / finish / message, args {"command": the action text},
  text = the action's "thought"; result = the next observation; usage.costUsd from metrics.costs
  when it holds exactly one cost per step.
Failures marked by the harness: a non-zero exit_code it recorded ("exit code N"), an "error"
observation ("error observation"), the file editor's "ERROR:\\n" prefix that OpenHands adds to a
failed editor call ("editor error"), and agentskills' own rejections of an edit ("[Your proposed
edit has introduced new syntax error(s)" -> "edit rejected: syntax error"; "[No exact match found"
-> "edit rejected: no exact match").
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


SKIP_ACTIONS = {"system", "recall", "change_agent_state", "null"}


def obs_error(o):
    if o is None:
        return None
    kind = o.get("observation")
    content = o.get("content") or ""
    if kind == "error":
        return "error observation"
    ec = None
    ex = o.get("extras") or {}
    md = ex.get("metadata") if isinstance(ex.get("metadata"), dict) else None
    if md and md.get("exit_code") is not None:
        ec = md.get("exit_code")
    elif o.get("exit_code") is not None:
        ec = o.get("exit_code")
    elif ex.get("exit_code") is not None:
        ec = ex.get("exit_code")
    if kind == "run" and ec not in (None, 0):
        return "exit code %s" % ec
    if content.startswith("ERROR:\n"):
        return "editor error"
    if content.startswith("[Your proposed edit has introduced new syntax error(s)"):
        return "edit rejected: syntax error"
    if content.startswith("[No exact match found"):
        return "edit rejected: no exact match"
    return None


def convert_new(hist):
    by_cause = {}
    for e in hist:
        if "observation" in e and e.get("cause") is not None:
            by_cause.setdefault(e["cause"], e)
    steps = []
    pending_input = []
    cur_resp = None
    for e in hist:
        src = e.get("source")
        if "action" in e:
            a = e["action"]
            if a in SKIP_ACTIONS:
                continue
            if src == "user":
                if a == "message":
                    if not steps and not pending_input:
                        # the task itself: keep it as the first step's input
                        pass
                    pending_input.append(e.get("args", {}).get("content") or e.get("message") or "")
                continue
            if src != "agent":
                continue
            tcm = e.get("tool_call_metadata")
            if tcm is None:
                # a text-only reply (MessageAction) or finish without metadata
                txt = (e.get("args") or {}).get("content") or (e.get("args") or {}).get("thought") or e.get("message") or ""
                step = {"text": txt, "toolCalls": []}
                if a == "finish":
                    step["toolCalls"].append({"name": "finish", "args": {k: v for k, v in (e.get("args") or {}).items() if k != "thought"}, "result": None})
                if pending_input:
                    step["input"] = "\n\n".join(pending_input)
                    pending_input = []
                steps.append(step)
                cur_resp = None
                continue
            mr = tcm.get("model_response") or {}
            rid = mr.get("id")
            choice = (mr.get("choices") or [{}])[0]
            msg = choice.get("message") or {}
            calls_by_id = {tc.get("id"): tc for tc in (msg.get("tool_calls") or [])}
            tc = calls_by_id.get(tcm.get("tool_call_id"))
            name = tcm.get("function_name")
            args = None
            if tc is not None:
                raw = tc.get("function", {}).get("arguments")
                try:
                    args = json.loads(raw) if isinstance(raw, str) else raw
                except Exception:
                    args = {"_raw": raw}
            if args is None:
                args = {}
            o = by_cause.get(e.get("id"))
            call = {"name": name, "args": args, "result": cut(o.get("content")) if o else None,
                    "error": obs_error(o)}
            if cur_resp is not None and cur_resp[0] == rid and rid is not None:
                cur_resp[1]["toolCalls"].append(call)
                continue
            content = msg.get("content")
            if isinstance(content, list):
                content = "\n".join(c.get("text", "") for c in content if isinstance(c, dict))
            step = {"text": content or "", "toolCalls": [call]}
            if choice.get("finish_reason"):
                step["finishReason"] = choice["finish_reason"]
            u = mr.get("usage") or {}
            if u:
                step["usage"] = {"inputTokens": u.get("prompt_tokens"), "outputTokens": u.get("completion_tokens"),
                                 "totalTokens": u.get("total_tokens")}
            if pending_input:
                step["input"] = "\n\n".join(pending_input)
                pending_input = []
            steps.append(step)
            cur_resp = (rid, step)
        elif "observation" in e:
            if e.get("observation") == "error" and e.get("cause") is None:
                step = {"text": "", "toolCalls": [], "meta": {"formatError": True, "errorObservation": e.get("content")}}
                steps.append(step)
                cur_resp = None
    return steps


def convert_old(hist):
    steps = []
    pending_input = []
    i = 0
    n = len(hist)
    while i < n:
        e = hist[i]
        if "action" in e:
            a = e["action"]
            if a in SKIP_ACTIONS:
                i += 1
                continue
            if a == "message" and (e.get("source") == "user" or not steps and not e.get("thought")):
                pending_input.append(e.get("content") or "")
                i += 1
                continue
            o = None
            if i + 1 < n and "observation" in hist[i + 1]:
                o = hist[i + 1]
                i += 1
            thought = e.get("thought") or ""
            if a == "run":
                call = {"name": "execute_bash", "args": {"command": e.get("command")}}
            elif a == "run_ipython":
                call = {"name": "execute_ipython", "args": {"command": e.get("code")}}
            elif a == "browse_interactive":
                call = {"name": "execute_browse", "args": {"command": e.get("browser_actions")}}
            elif a == "finish":
                call = {"name": "finish", "args": {}}
            elif a == "message":
                call = None
                thought = e.get("content") or thought
            else:
                call = {"name": a, "args": {k: v for k, v in e.items() if k not in ("action", "thought", "action_risk", "is_confirmed")}}
            step = {"text": thought, "toolCalls": []}
            if call is not None:
                call["result"] = cut(o.get("content")) if o else None
                call["error"] = obs_error(o)
                step["toolCalls"].append(call)
            if pending_input:
                step["input"] = "\n\n".join(pending_input)
                pending_input = []
            steps.append(step)
        i += 1
    return steps


def main():
    args = sys.argv[1:]
    if len(args) != 2 or args[0] != "--line":
        sys.exit("usage: openhands_history.py --line N < output.jsonl")
    want = int(args[1])
    for k, line in enumerate(sys.stdin.read().splitlines(), 1):
        if k != want:
            continue
        d = json.loads(line)
        hist = d["history"]
        new = any("tool_call_metadata" in e or "source" in e for e in hist)
        steps = convert_new(hist) if new else convert_old(hist)
        costs = ((d.get("metrics") or {}).get("costs") or [])
        if not new and costs and len(costs) == len(steps) and all(isinstance(c, (int, float)) for c in costs):
            # the 2024 format keeps one cost per LLM call, in order; one step is one call
            for st, c in zip(steps, costs):
                st["usage"] = {"costUsd": c}
        for s in steps:
            print(json.dumps(s, ensure_ascii=False))
        return
    sys.exit("no line %d" % want)


if __name__ == "__main__":
    main()
