#!/usr/bin/env python3
"""CrewAI test cassette (VCR recording of a crew's model calls) -> loopguard steps.

    git show COMMIT:CASSETTE.yaml | python3 crewai_cassette.py > run.jsonl

A cassette records, in order, the HTTP calls a test made; each chat completion is one model step
of the agent whose system prompt it carries (`meta.speaker`: the role of "You are ROLE."). The
model's reply is read as CrewAI reads it:
- ReAct text: `Thought: ...` is the text; `Action: NAME` with `Action Input: {...}` is the call
  (anything the model wrote after the action input, such as an `Observation:` it made up, is
  dropped, as CrewAI drops it); `Final Answer:` ends the agent's task (a text-only step);
- native function calling: the reply's tool_calls.
The call's result is what CrewAI sent back on that agent's next request: the last `Observation:`
after the action (ReAct), or the `tool` message with the call's id. CrewAI's own notices in an
observation ("I tried reusing the same input, I must stop using this action input...") stay part
of the result, as the model saw them; a harness message appended after it ("Now it's time you
MUST give your absolute best final answer...") is the next step's `input`. Usage and the finish
reason come from the response.
"""
import gzip
import json
import re
import sys

import yaml

FORCE = re.compile(r"\n+(Now it's time you MUST give your absolute best final answer.*)$", re.S)


def interactions(doc):
    for it in doc.get("interactions", []):
        rq, rs = it["request"], it["response"]
        uri = rq.get("uri") or rq.get("url") or ""
        if "chat/completions" not in uri:
            continue
        body = rq.get("body") or rq.get("content")
        rb = rs.get("content") if "content" in rs else (rs.get("body") or {}).get("string")
        if isinstance(rb, bytes):
            try:
                rb = gzip.decompress(rb).decode()
            except OSError:
                rb = rb.decode("utf-8", "replace")
        req, resp = json.loads(body), json.loads(rb)
        if "choices" not in resp:
            continue
        yield req, resp


def speaker(req):
    sys_msg = next((m for m in req["messages"] if m["role"] == "system"), req["messages"][0])
    c = sys_msg.get("content") or ""
    m = re.match(r"You are ([^.\n]*)", c)
    return m.group(1).strip() if m else "agent"


def parse_react(content):
    """Returns (text, call or None, final)."""
    c = content.strip().strip("`").strip()
    m = re.search(r"(?:^|\n)Action:\s*(.*?)\s*\nAction Input:\s*(.*)$", c, re.S)
    if m:
        text = c[:m.start()].strip()
        name = m.group(1).strip()
        raw = re.split(r"\nObservation:", m.group(2))[0].strip().strip("`").strip()
        try:
            args = json.loads(raw)
            if not isinstance(args, dict):
                args = {"value": args}
        except ValueError:
            args = {"raw": raw}
        text = re.sub(r"^Thought:\s*", "", text)
        return text, {"name": name, "args": args}, False
    text = re.sub(r"^Thought:\s*", "", c)
    return text, None, "Final Answer:" in c


def all_text(req):
    out = []
    for m in req["messages"]:
        c = m.get("content")
        if isinstance(c, list):
            c = "\n".join(p.get("text", "") for p in c if isinstance(p, dict))
        out.append(c or "")
    return out


REMINDER = re.compile(r"\n+You ONLY have access to the following tools.*$", re.S)


def observation(later, content):
    """The result CrewAI sent for the call: in the agent's first later request that holds the
    model's reply, the Observation CrewAI appended after it (the reply itself may end in an
    Observation the model made up). A tools reminder CrewAI appends to it is dropped."""
    content = content.strip().strip("`").strip()
    head = content.split("\nAction Input:")[0]
    key = head[-120:]
    tail = content[len(head):].rstrip()
    for req in later:
        for c in reversed(all_text(req)):
            i = c.rfind(key)
            if i < 0:
                continue
            rest = c[i + len(key):]
            if rest.startswith(tail):
                rest = rest[len(tail):]
            else:  # the reply was cut at its first made-up Observation
                rest = rest[rest.find("\nAction Input:"):]
                rest = rest[rest.find("\n", 1):] if "\n" in rest[1:] else ""
            rest = rest.lstrip("\n")
            if not rest.startswith("Observation:"):
                continue
            obs = rest[len("Observation:"):].strip()
            forced = None
            m = FORCE.search(obs)
            if m:
                forced = m.group(1).strip()
                obs = obs[:m.start()].strip()
            obs = REMINDER.sub("", obs).strip()
            return obs, forced
    return None, None


def convert(doc):
    calls = list(interactions(doc))
    steps = []
    pending_input = {}
    for i, (req, resp) in enumerate(calls):
        who = speaker(req)
        msg = resp["choices"][0]["message"]
        step = {"text": "", "toolCalls": []}
        later = [r for r, _ in calls[i + 1:] if speaker(r) == who]
        nxt = later[0] if later else None
        if msg.get("tool_calls"):
            step["text"] = (msg.get("content") or "").strip()
            for tc in msg["tool_calls"]:
                f = tc["function"]
                try:
                    args = json.loads(f.get("arguments") or "{}")
                except ValueError:
                    args = {"raw": f.get("arguments")}
                result = None
                if nxt:
                    for m in nxt["messages"]:
                        if m.get("role") == "tool" and m.get("tool_call_id") == tc["id"]:
                            result = m.get("content")
                step["toolCalls"].append({"name": f["name"], "args": args, "result": result})
        else:
            text, call, _ = parse_react(msg.get("content") or "")
            step["text"] = text
            if call:
                result, forced = (None, None)
                if later:
                    result, forced = observation(later, msg.get("content") or "")
                call["result"] = result
                step["toolCalls"].append(call)
                if forced:
                    pending_input[who] = forced
        if pending_input.get(("for", who)):
            step["input"] = pending_input.pop(("for", who))
        if who in pending_input:
            pending_input[("for", who)] = pending_input.pop(who)
        fr = resp["choices"][0].get("finish_reason")
        f = {"stop": "stop", "tool_calls": "tool-calls", "length": "length"}.get(fr)
        if f:
            step["finishReason"] = f
        u = resp.get("usage")
        if u:
            step["usage"] = {"inputTokens": u["prompt_tokens"], "outputTokens": u["completion_tokens"],
                             "totalTokens": u["total_tokens"]}
        step["meta"] = {"speaker": who}
        steps.append(step)
    return steps


def main():
    doc = yaml.safe_load(sys.stdin)
    for s in convert(doc):
        print(json.dumps(s, ensure_ascii=False))


main()
