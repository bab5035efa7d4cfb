#!/usr/bin/env python3
"""LangGraph multi-agent notebook output (printed stream chunks) -> loopguard steps.

    git show COMMIT:NOTEBOOK | python3 langgraph_stream.py --cell N > run.jsonl

The cell prints one chunk of `graph.stream(...)` at a time, each the repr of a Python value,
separated by lines `---` (or one per line): `{node: update}`, or `(namespace, {node: update})`
with `subgraphs=True`. Reprs are read with `ast` (literals and constructor calls only; nothing is
evaluated). Steps, in the order printed:
- every AIMessage (once, by its id) is a model step of the agent that wrote it (`meta.speaker`: the
  innermost subgraph of the namespace, else the node): its text is the message's text content,
  its calls its tool_calls, their results the ToolMessages with those ids (`status='error'` gives
  error "status error"); usage and the finish reason from its metadata, where recorded;
- a supervisor that routes by structured output prints only `{'supervisor': {'next': X}}`: that
  decision is a step with one call `route` {"next": X}, whose result is the reply of the team or
  agent it routed to (the next chunk's message; none for FINISH). The routed team's reply is the
  call's result, not a step, since its own model calls are not printed;
- a HumanMessage is the `input` of the next step when its text is new (the task, a user's turn),
  and nothing when it relays a text already in the run (a subgraph's answer handed up).
"""
import argparse
import ast
import json
import re
import sys


def value(node):
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Dict):
        return {value(k): value(v) for k, v in zip(node.keys, node.values)}
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        return [value(e) for e in node.elts]
    if isinstance(node, ast.Call):
        name = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", "?")
        d = {"__type": name}
        for kw in node.keywords:
            d[kw.arg] = value(kw.value)
        if node.args:
            d["__args"] = [value(a) for a in node.args]
        return d
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -value(node.operand)
    if isinstance(node, ast.Name):
        return {"__name": node.id}
    if isinstance(node, ast.Attribute):
        return {"__name": node.attr}
    raise ValueError("unexpected %s" % type(node).__name__)


def cell_text(nb, n):
    out = ""
    for o in nb["cells"][n].get("outputs", []):
        if "text" in o:
            out += "".join(o["text"])
    return out


def chunks(text):
    parts = re.split(r"\n-{3,}\n", "\n" + text + "\n")
    for p in parts:
        p = p.strip()
        if not p:
            continue
        try:
            yield value(ast.parse(p, mode="eval").body)
            continue
        except SyntaxError:
            pass
        for line in p.split("\n"):  # one chunk a line
            line = line.strip()
            if not line:
                continue
            try:
                yield value(ast.parse(line, mode="eval").body)
            except SyntaxError:  # a warning or a print of the notebook's own, not a chunk
                print("skipped: %s" % line[:100], file=sys.stderr)


def text_of(content):
    if isinstance(content, str):
        return content
    out = []
    for part in content or []:
        if isinstance(part, dict) and part.get("type") == "text":
            out.append(part.get("text", ""))
        elif isinstance(part, str):
            out.append(part)
    return "\n".join(out)


def calls_of(m):
    out = []
    if m.get("tool_calls"):
        for c in m["tool_calls"]:
            out.append((c.get("id"), c.get("name"), c.get("args") or {}))
    else:
        for c in (m.get("additional_kwargs") or {}).get("tool_calls") or []:
            f = c.get("function", {})
            try:
                args = json.loads(f.get("arguments") or "{}")
            except ValueError:
                args = {"raw": f.get("arguments")}
            out.append((c.get("id"), f.get("name"), args))
    return out


def usage_of(m):
    u = m.get("usage_metadata")
    if isinstance(u, dict) and "input_tokens" in u:
        return {"inputTokens": u["input_tokens"], "outputTokens": u["output_tokens"],
                "totalTokens": u.get("total_tokens", u["input_tokens"] + u["output_tokens"])}
    t = (m.get("response_metadata") or {}).get("token_usage")
    if isinstance(t, dict) and "prompt_tokens" in t:
        return {"inputTokens": t["prompt_tokens"], "outputTokens": t["completion_tokens"],
                "totalTokens": t.get("total_tokens", t["prompt_tokens"] + t["completion_tokens"])}
    return None


def finish_of(m):
    r = m.get("response_metadata") or {}
    f = r.get("finish_reason") or r.get("stop_reason")
    return {"tool_calls": "tool-calls", "tool_use": "tool-calls", "stop": "stop", "end_turn": "stop",
            "length": "length", "max_tokens": "length"}.get(f) if f else None


def convert(text):
    steps, seen_ai, seen_tool, texts = [], set(), set(), set()
    pending = []
    open_calls = {}
    route = None

    def add(step, speaker):
        nonlocal pending
        if pending:
            step["input"] = "\n\n".join(pending)
            pending = []
        step["meta"] = {"speaker": speaker}
        steps.append(step)

    for ch in chunks(text):
        ns = []
        if isinstance(ch, list) and len(ch) == 2 and isinstance(ch[1], dict):
            ns, ch = ch
        if not isinstance(ch, dict):
            continue
        for node, upd in ch.items():
            speaker = ns[-1].split(":")[0] if ns else node
            if isinstance(upd, dict) and "next" in upd and "messages" not in upd:
                route = {"name": "route", "args": {"next": upd["next"]}, "result": None}
                add({"text": "", "toolCalls": [route]}, node)
                continue
            msgs = upd.get("messages", []) if isinstance(upd, dict) else []
            if isinstance(msgs, dict):
                msgs = [msgs]
            for m in msgs:
                t = m.get("__type") if isinstance(m, dict) else None
                if t in ("AIMessage", "AIMessageChunk"):
                    if m.get("id") in seen_ai:
                        continue
                    seen_ai.add(m.get("id"))
                    body = text_of(m.get("content"))
                    step = {"text": body, "toolCalls": []}
                    for cid, name, args in calls_of(m):
                        c = {"name": name, "args": args, "result": None}
                        open_calls[cid] = c
                        step["toolCalls"].append(c)
                    f = finish_of(m)
                    if f:
                        step["finishReason"] = f
                    u = usage_of(m)
                    if u:
                        step["usage"] = u
                    texts.add(body.strip())
                    add(step, m.get("name") or speaker)
                elif t == "ToolMessage":
                    key = m.get("tool_call_id")
                    if key in seen_tool or key not in open_calls:
                        continue
                    seen_tool.add(key)
                    c = open_calls[key]
                    c["result"] = text_of(m.get("content"))
                    if m.get("status") == "error":
                        c["error"] = "status error"
                elif t == "HumanMessage":
                    body = text_of(m.get("content")).strip()
                    if route is not None and route["result"] is None and node == route["args"]["next"]:
                        route["result"] = body  # the routed team's reply
                        texts.add(body)
                        continue
                    if body in texts:
                        continue
                    texts.add(body)
                    pending.append(body)
            if route is not None and route["result"] is not None:
                route = None
    return steps


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cell", type=int, required=True)
    a = ap.parse_args()
    nb = json.load(sys.stdin)
    for s in convert(cell_text(nb, a.cell)):
        print(json.dumps(s, ensure_ascii=False))


main()
