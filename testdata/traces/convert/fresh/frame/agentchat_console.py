#!/usr/bin/env python3
"""AutoGen AgentChat (0.4+) console output of a team run -> loopguard steps (one JSON object a line).

    git show COMMIT:NOTEBOOK | python3 agentchat_console.py --cell N [--from K] [--until K] > run.jsonl

Reads the printed output of notebook cell N (what `Console(team.run_stream(...))` wrote), in
either console layout: `---------- source ----------` (0.4.0-0.4.x) or `---------- Kind (source)
----------` (later). One step per model response of any agent of the team:
- a tool-call request (`[FunctionCall(...)]`) is a step; its calls get their results from the
  following `[FunctionExecutionResult(...)]` by call_id (`is_error=True` gives error "is_error";
  where the layout prints no is_error, a result starting with "Error:" gives "error observation");
  a thought the model wrote with the calls (a ThoughtEvent, or in the old layout a text block of the
  same agent right before its call, with no usage line of its own) is the step's text;
- a text message of an agent is a text-only step;
- what the harness prints on the model's behalf is no step: the tool-call summary (`Tool calls:`,
  or the results' text repeated), the handoff message (`Transferred to X, adopting the role of X
  immediately.`), the Summary block, a StopMessage;
- a message from `user` (or a user proxy) is the `input` of the next step.
The speaking agent is in `meta.speaker`; the text is only what the model wrote (never the
speaker's name). `[Prompt tokens: N, Completion tokens: M]` lines give `usage`.
--from/--until keep the steps from the K-th `user` message on, and before the K-th (1-based), for a
cell that prints several runs one after the other.
"""
import argparse
import ast
import json
import re
import sys

HEADER = re.compile(r"^-{5,} (.*?) -{5,}$")
USAGE = re.compile(r"^\[Prompt tokens: (\d+), Completion tokens: (\d+)\]$")
KINDS = ("TextMessage", "ToolCallRequestEvent", "ToolCallExecutionEvent", "ToolCallSummaryMessage",
         "ThoughtEvent", "HandoffMessage", "StopMessage", "UserInputRequestedEvent", "MultiModalMessage",
         "MemoryQueryEvent", "SelectSpeakerEvent", "ModelClientStreamingChunkEvent")
USERS = ("user", "UserProxyAgent", "user_proxy")


def cell_text(nb, n):
    c = nb["cells"][n]
    out = ""
    for o in c.get("outputs", []):
        if "text" in o:
            out += "".join(o["text"])
    return out


def blocks(text):
    """Splits the console text into (kind, source, body, usage)."""
    out = []
    cur = None
    for line in text.split("\n"):
        m = HEADER.match(line)
        if m:
            if cur:
                out.append(cur)
            head = m.group(1)
            k = re.match(r"^(\w+) \((.*)\)$", head)
            if k and k.group(1) in KINDS:
                cur = [k.group(1), k.group(2), [], None]
            else:
                cur = [None, head, [], None]
            continue
        if cur is None:
            continue
        u = USAGE.match(line)
        if u:
            cur[3] = {"inputTokens": int(u.group(1)), "outputTokens": int(u.group(2)),
                      "totalTokens": int(u.group(1)) + int(u.group(2))}
            continue
        cur[2].append(line)
    if cur:
        out.append(cur)
    res = []
    for kind, src, body, usage in out:
        body = "\n".join(body)
        if src == "Summary" and kind is None:
            kind = "Summary"
        # The layout prints TaskResult(...) or similar reprs after the run: not part of a block.
        body = re.split(r"\nTaskResult\(messages=", body)[0]
        res.append([kind, src, body.rstrip("\n"), usage])
    return res


def calls_of(expr, ctor):
    """Parses "[FunctionCall(id=..., arguments=..., name=...)]" (no eval: literals only)."""
    tree = ast.parse(expr.strip(), mode="eval").body
    assert isinstance(tree, ast.List), expr[:80]
    out = []
    for node in tree.elts:
        assert isinstance(node, ast.Call) and getattr(node.func, "id", None) == ctor, expr[:80]
        out.append({kw.arg: ast.literal_eval(kw.value) for kw in node.keywords})
    return out


def args_of(s):
    try:
        v = json.loads(s)
    except ValueError:
        return {"raw": s}
    return v if isinstance(v, dict) else {"value": v}


def convert(text, start=None, until=None):
    bs = blocks(text)
    # Infer the kind of each block of the old layout.
    for i, b in enumerate(bs):
        if b[0] is not None:
            continue
        body = b[2].strip()
        if b[1] in USERS:
            b[0] = "TextMessage"
        elif body.startswith("[FunctionCall("):
            b[0] = "ToolCallRequestEvent"
        elif body.startswith("[FunctionExecutionResult("):
            b[0] = "ToolCallExecutionEvent"
        else:
            prev = bs[i - 1] if i else None
            if prev and prev[1] == b[1] and prev[0] == "ToolCallExecutionEvent":
                contents = [r.get("content") for r in calls_of(prev[2], "FunctionExecutionResult")]
                if body.startswith("Tool calls:") or body == "\n".join(str(c) for c in contents).strip():
                    b[0] = "ToolCallSummaryMessage"
                    continue
                if body.startswith("Transferred to ") and "adopting the role" in body:
                    b[0] = "HandoffMessage"
                    continue
            nxt = bs[i + 1] if i + 1 < len(bs) else None
            if nxt and nxt[1] == b[1] and nxt[2].strip().startswith("[FunctionCall(") and b[3] is None:
                b[0] = "ThoughtEvent"
            else:
                b[0] = "TextMessage"
    steps = []
    pending_input = []
    thought = None
    users = 0
    keep = start is None
    for kind, src, body, usage in bs:
        if kind in ("Summary", "StopMessage", "UserInputRequestedEvent", "SelectSpeakerEvent"):
            continue
        if kind == "TextMessage" and src in USERS:
            users += 1
            if start is not None and users == start:
                keep = True
            if until is not None and users == until:
                break
            pending_input.append(body)
            continue
        if not keep:
            continue
        if kind == "ThoughtEvent":
            thought = body
            continue
        if kind == "ToolCallRequestEvent":
            step = {"text": thought or "", "toolCalls": []}
            thought = None
            for fc in calls_of(body, "FunctionCall"):
                step["toolCalls"].append({"name": fc["name"], "args": args_of(fc.get("arguments", "")),
                                          "_id": fc.get("id")})
        elif kind == "ToolCallExecutionEvent":
            last = steps[-1]
            for r in calls_of(body, "FunctionExecutionResult"):
                for c in last["toolCalls"]:
                    if c.get("_id") == r.get("call_id") and "result" not in c:
                        c["result"] = r.get("content")
                        if r.get("is_error"):
                            c["error"] = "is_error"
                        elif "is_error" not in r and str(r.get("content")).startswith("Error:"):
                            c["error"] = "error observation"  # older layouts print no is_error
                        break
                else:
                    raise SystemExit("result without its call: %r" % r.get("call_id"))
            continue
        elif kind in ("ToolCallSummaryMessage", "HandoffMessage"):
            continue
        elif kind in ("TextMessage", "MultiModalMessage"):
            if thought:
                raise SystemExit("thought before a text message")
            step = {"text": body, "toolCalls": []}
        else:
            raise SystemExit("unknown block %s (%s)" % (kind, src))
        if pending_input:
            step["input"] = "\n\n".join(pending_input)
            pending_input = []
        if usage:
            step["usage"] = usage
        step["meta"] = {"speaker": src}
        steps.append(step)
    for s in steps:
        for c in s["toolCalls"]:
            c.pop("_id", None)
            c.setdefault("result", None)
    return steps


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cell", type=int, required=True)
    ap.add_argument("--from", dest="start", type=int)
    ap.add_argument("--until", type=int)
    a = ap.parse_args()
    nb = json.load(sys.stdin)
    for s in convert(cell_text(nb, a.cell), a.start, a.until):
        print(json.dumps(s, ensure_ascii=False))


main()
