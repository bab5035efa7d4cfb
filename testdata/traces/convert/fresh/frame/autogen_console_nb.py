#!/usr/bin/env python3
"""Convert the console transcript that AutoGen 0.2 (pyautogen) printed into a notebook cell's
output into loopguard steps, one step per LLM message of the chosen agent(s).

Rerun (example):
  git --git-dir=/work/.mirror/microsoft+autogen/repo show COMMIT:notebook/NAME.ipynb \
    | python3 testdata/traces/convert/frameworks/autogen_console_nb.py --cell N --agents assistant --executors user_proxy \
    > testdata/traces/NAME.jsonl
(the exact arguments of every run are in notes.md and in the manifest's notes)

The transcript is a list of messages "SENDER (to RECIPIENT):\n\nBODY\n\n-----...". Rules:
- A message whose sender is in --agents is one step (text = its body without tool-call blocks),
  unless SENDER>RECIPIENT is listed in --skip (nested-chat summaries that copy an earlier message;
  such a message sent to the agent becomes the "input" of the agent's next step).
- Function/tool calling ("***** Suggested tool call (ID): NAME *****" + "Arguments:" JSON) gives
  toolCalls {name, args}; the later "***** Response from calling tool (ID) *****" fills "result".
  A result starting with "Error:" is marked error "error observation" (AutoGen's own prefix for a
  function that raised). A human who refuses to run the call answers "USER INTERRUPTED": the step
  gets meta.userInterrupted.
- Code execution: a message "exitcode: N ..." from an --executors agent is the result of the code
  of the latest agent message not yet run: that step gets one toolCall named after the first code
  block's language (AutoGen runs all blocks of a message and answers once), args {"command": the
  code blocks joined, or the whole body when no block is found}, result = the executor's message;
  error "exit code N" when N != 0. The text keeps the whole message.
- --board NAME: NAME is a text-action harness (a chess board agent that parses each player
  message into a move): every agent message to NAME is a call {name: "move", args: {"command":
  body}} whose result is NAME's answer; an answer starting with "Error" gets error "error
  observation".
- Any other message to the agent becomes "input" of the agent's next step.
"""
import argparse
import json
import re
import sys

ANSI = re.compile(r"\x1b\[[0-9;]*m")
HDR = re.compile(r"^([A-Za-z0-9_\-\.]+(?: [A-Za-z0-9_\-\.]+)*) \(to ([A-Za-z0-9_\-\.]+(?: [A-Za-z0-9_\-\.]+)*)\):[ \t]*$", re.M)
SEP = re.compile(r"\n-{80}\n?")
NOISE = re.compile(r"^(>>>>>>>> .*|chat_info.*)$", re.M)
NEWCHAT = re.compile(r"^\*{80}\n(?:Starting a new chat|Start a new chat).*?\n\*{80}$", re.M | re.S)
TOOLCALL = re.compile(
    r"\*{5} Suggested (?:tool|function) [cC]all \(?([^)\s]*)\)?:? ?([A-Za-z0-9_\-\.]*) \*{5}\nArguments: ?\n(.*?)\n\*{20,}",
    re.S,
)
RESPONSE = re.compile(r"\*{5} Response from calling (?:tool|function) \(?\"?([^)\"\s]*)\"?\)? \*{5}\n(.*?)\n\*{20,}", re.S)
CODE = re.compile(r"```[ \t]*(\w+)?[ \t]*\r?\n(.*?)\r?\n[ \t]*```", re.S)
LIMIT = 16 * 1024


def cap(s):
    b = s.encode("utf-8")
    if len(b) <= LIMIT:
        return s
    head = b[:8192].decode("utf-8", "ignore")
    tail = b[-4096:].decode("utf-8", "ignore")
    return head + "...[%d bytes cut]..." % (len(b) - len(head.encode()) - len(tail.encode())) + tail


def messages(text):
    text = NEWCHAT.sub("", ANSI.sub("", text))
    parts = HDR.split(text)
    out = []
    for j in range(1, len(parts), 3):
        body = SEP.split(parts[j + 2])[0]
        body = NOISE.sub("", body).strip("\n")
        out.append((parts[j], parts[j + 1], body))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cell", type=int, required=True)
    ap.add_argument("--agents", required=True, help="comma-separated LLM agents whose messages are steps")
    ap.add_argument("--executors", default="", help="comma-separated code-executing agents")
    ap.add_argument("--skip", default="", help="comma-separated SENDER>RECIPIENT pairs that are not model turns")
    ap.add_argument("--board", default="", help="text-action board agent")
    ap.add_argument("--first", type=int, default=1, help="first message number (1-based) to consider")
    ap.add_argument("--last", type=int, default=0, help="last message number to consider (0 = all)")
    a = ap.parse_args()
    agents = set(a.agents.split(","))
    executors = set(filter(None, a.executors.split(",")))
    skip = set(filter(None, a.skip.split(",")))
    nb = json.load(sys.stdin)
    cell = nb["cells"][a.cell]
    text = "".join(
        "".join(o["text"]) if isinstance(o.get("text"), list) else o.get("text", "")
        for o in cell.get("outputs", [])
        if o.get("output_type") == "stream"
    )
    msgs = messages(text)
    msgs = msgs[a.first - 1 : (a.last or len(msgs))]
    steps = []
    pending_input = None
    last_step = None
    for i, (snd, rcv, body) in enumerate(msgs):
        if not body.strip():
            continue  # AutoGen prints an empty header before a tool response
        if "%s>%s" % (snd, rcv) in skip:
            if rcv in agents:  # e.g. the opponent's move that starts the agent's next nested chat
                pending_input = body if pending_input is None else pending_input + "\n\n" + body
            continue
        if snd in agents:
            calls = []
            for m in TOOLCALL.finditer(body):
                cid, name, args = m.groups()
                try:
                    args = json.loads(args) if args.strip() else {}
                except ValueError:
                    args = {"raw": args}
                c = {"name": name, "args": args}
                calls.append(c)
                if cid:
                    c["_id"] = cid
            txt = TOOLCALL.sub("", body).strip()
            if a.board and rcv == a.board:
                calls.append({"name": "move", "args": {"command": body}})
            code_blocks = CODE.findall(body) if executors else []
            step = {"text": txt, "toolCalls": calls}
            if executors:
                step["_code"] = (body, code_blocks)
            if pending_input is not None:
                step["input"] = pending_input
                pending_input = None
            meta = {}
            if len(agents) > 1:
                meta["speaker"] = snd
            if meta:
                step["meta"] = meta
            steps.append(step)
            last_step = step
            continue
        # a message to the agent(s); messages between other agents are ignored
        if rcv not in agents and rcv != "chat_manager":
            continue
        resp = list(RESPONSE.finditer(body))
        if resp:
            for m in resp:
                cid, res = m.groups()
                # call ids can repeat within a transcript (cached completions): match the
                # calls of the agent's latest step only
                own = [c for c in (last_step or {}).get("toolCalls", []) if "result" not in c]
                c = next((c for c in own if c.get("_id") == cid), None)
                if c is None and len(own) == 1:
                    c = own[0]
                if c is not None:
                    c["result"] = cap(res)
                    if res.startswith("Error"):
                        c["error"] = "error observation"
                    if res.strip() == "USER INTERRUPTED":  # a human refused to run the call
                        last_step.setdefault("meta", {})["userInterrupted"] = True
            continue
        if a.board and snd == a.board and last_step and last_step["toolCalls"] and last_step["toolCalls"][-1]["name"] == "move":
            c = last_step["toolCalls"][-1]
            if "result" not in c:
                c["result"] = cap(body)
                if body.startswith("Error"):
                    c["error"] = "error observation"
                continue
        if snd in executors and body.startswith("exitcode:"):
            # the executor ran the code of the latest agent message that has code and no result
            target = next((st for st in reversed(steps) if "_code" in st), None)
            if target is not None:
                body0, blocks = target.pop("_code")
                lang = (blocks[0][0] or "unknown") if blocks else "unknown"
                cmd = "\n\n".join(b for _, b in blocks) if blocks else body0
                c = {"name": lang, "args": {"command": cmd}, "result": cap(body)}
                m = re.match(r"exitcode: (-?\d+)", body)
                if m and m.group(1) != "0":
                    c["error"] = "exit code %s" % m.group(1)
                target["toolCalls"].append(c)
                for st in steps:  # older code that was never run stays text
                    st.pop("_code", None)
                continue
        if rcv in agents or rcv == "chat_manager":
            pending_input = body if pending_input is None else pending_input + "\n\n" + body
    for s in steps:
        s.pop("_code", None)
        for c in s["toolCalls"]:
            c.pop("_id", None)
        sys.stdout.write(json.dumps(s, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
