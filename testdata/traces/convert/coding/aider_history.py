#!/usr/bin/env python3
"""Convert one session of an aider chat history (.aider.chat.history.md) to loopguard steps.

Rerun (the aider repository's own test fixture, a real log of aider's author using aider):
  git --git-dir=/work/.mirror/Aider-AI+aider/repo show \
      5dc9490bb35f9729ef2c95d00a19ccd30c26339c:tests/fixtures/chat-history.md \
    | python3 testdata/traces/convert/coding/aider_history.py --start LINE > testdata/traces/NAME.jsonl
where LINE is the 1-based line of the session's "# aider chat started at ..." header.
  ... | python3 testdata/traces/convert/coding/aider_history.py --list      lists every session with a few counts.

Format of the source (aider writes it as the chat goes):
  "# aider chat started at T"   starts a session;
  "#### text"                   is what the user typed (one line each);
  "> text"                      is aider's own output (tool output, edits applied, errors, token counts);
  any other line                is the model's reply.
One step = one model reply. Its tool calls are the SEARCH/REPLACE blocks it contains (aider's
"diff" edit format), name "search_replace", args {"command": "<file>\n<<<<<<< SEARCH ... >>>>>>> REPLACE"};
a reply with no block is a step with "toolCalls": []. The result of every block is aider's output
after the reply (without the "Tokens:" line, which goes to usage). aider marks failures itself:
"SearchReplaceNoExactMatch" for a block whose SEARCH text it could not find (only the blocks it
names get the error), "Fix any errors below" after an edit that fails its linter ("lint errors"),
and test failures it asks to fix ("test errors"). "input" holds the user lines ("####") typed since
the previous reply, with aider's answers to them (e.g. /run output), verbatim.
"""
import json
import re
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


def sessions(lines):
    starts = [i for i, l in enumerate(lines) if l.startswith("# aider chat started at")]
    starts.append(len(lines))
    return [(a, b) for a, b in zip(starts, starts[1:])]


def strip_out(l):
    # "> text  " -> "text"
    s = l[1:]
    if s.startswith(" "):
        s = s[1:]
    if s.endswith("  "):
        s = s[:-2]
    return s


def strip_user(l):
    s = l[5:] if l.startswith("#### ") else l[4:]
    if s.endswith("  "):
        s = s[:-2]
    return s


def num(s):
    s = s.replace(",", "").strip()
    m = re.match(r"^([0-9.]+)([kKmM]?)$", s)
    if not m:
        return None
    v = float(m.group(1))
    if m.group(2) in "kK" and m.group(2):
        v *= 1000
    elif m.group(2) in "mM" and m.group(2):
        v *= 1000000
    return int(round(v))


TOK = re.compile(r"^Tokens: ([0-9.,kKmM]+) sent(?:, ([0-9.,kKmM]+) cache write)?(?:, ([0-9.,kKmM]+) cache hit)?, ([0-9.,kKmM]+) received\.(?: Cost: \$([0-9.]+) (?:message|request))?")

BLOCK = re.compile(r"<<<<<<< SEARCH\n(.*?)\n?=======\n(.*?)\n?>>>>>>> REPLACE", re.S)


def blocks(text):
    """SEARCH/REPLACE blocks with the file name aider would use (the last plain line before the fence)."""
    out = []
    lines = text.split("\n")
    i = 0
    fname = None
    while i < len(lines):
        l = lines[i]
        if l.strip() == "<<<<<<< SEARCH":
            # find the file name: walk back over the fence line
            j = i - 1
            while j >= 0 and (lines[j].strip().startswith("```") or lines[j].strip().startswith("<source")):
                j -= 1
            if j >= 0 and lines[j].strip() and not lines[j].strip().startswith(">>>>>>>"):
                cand = lines[j].strip().strip("`*:")
                if " " not in cand or "/" in cand or "." in cand:
                    fname = cand
            k = i
            while k < len(lines) and lines[k].strip() != ">>>>>>> REPLACE":
                k += 1
            body = "\n".join(lines[i:k + 1])
            search = ""
            m = BLOCK.search(body + ("\n" if k >= len(lines) else ""))
            if m:
                search = m.group(1)
            out.append({"file": fname, "block": body, "search": search, "complete": k < len(lines)})
            i = k + 1
            continue
        i += 1
    return out


def convert(seg):
    """seg: list of lines of one session. Returns (steps, meta)."""
    meta = {}
    for l in seg[:12]:
        if l.startswith("> Models:") or l.startswith("> Model:") or l.startswith("> Main model:"):
            meta["model"] = strip_out(l)
        if l.startswith("> Aider v"):
            meta["aider"] = strip_out(l)
    # tokenize into chunks: ("user", [lines]), ("out", [lines]), ("reply", [lines])
    chunks = []
    cont = False  # inside a multi-line aider message (only its first line has the "> " prefix)
    for l in seg[1:]:
        if l.startswith("#### ") or l == "####":
            kind = "user"
            cont = False
        elif l.startswith("> ") or l == ">":
            kind = "out"
            # aider ends each of its lines with two spaces; a line without them goes on
            # in the following unprefixed lines (multi-line commit messages, test output, prompts)
            cont = not l.endswith("  ") and l.strip() != ">"
        elif cont:
            kind = "out"
            # ends at the next "> " or "####" line, or after aider's answer line to a prompt
            if (l.startswith("(y/n") or l.startswith("Cost: $")) and l.endswith("  "):
                cont = False
            l = "> " + l
        else:
            kind = "reply"
        if chunks and chunks[-1][0] == kind:
            chunks[-1][1].append(l)
        else:
            chunks.append((kind, [l]))
    steps = []
    pending_input = []  # lines of user input (and aider's answers to it) since the last reply
    seen_reply = False
    cur = None
    for kind, ls in chunks:
        if kind == "reply":
            text = "\n".join(ls).strip("\n")
            if not text.strip():
                # blank lines between output blocks
                if cur is not None and pending_input == []:
                    continue
                continue
            cur = {"text": text, "out": [], "input": "\n".join(pending_input).strip("\n") or None}
            steps.append(cur)
            pending_input = []
            seen_reply = True
        elif kind == "user":
            pending_input.extend(strip_user(l) for l in ls)
            cur_is_closed = True
            cur = None if cur is None else cur
            # after a user line, further output belongs to the input, not to the previous reply
            cur = None
        else:  # out
            if cur is not None and not pending_input:
                cur["out"].extend(strip_out(l) for l in ls)
            elif seen_reply or pending_input:
                pending_input.extend(strip_out(l) for l in ls)
            else:
                pass  # session header
    res = []
    for s in steps:
        out = list(s["out"])
        usage = None
        for idx, l in enumerate(out):
            m = TOK.match(l)
            if m:
                usage = {"inputTokens": num(m.group(1)), "outputTokens": num(m.group(4))}
                if m.group(5):
                    usage["costUsd"] = float(m.group(5))
                del out[idx]
                if idx < len(out):
                    mc = re.match(r"^Cost: \$([0-9.]+) (?:message|request)", out[idx])
                    if mc and "costUsd" not in usage:
                        usage["costUsd"] = float(mc.group(1))
                        del out[idx]
                break
        while out and not out[-1].strip():
            out.pop()
        while out and not out[0].strip():
            out.pop(0)
        outtext = "\n".join(out)
        bl = blocks(s["text"])
        interrupted = (bool(bl) and usage is None and "Applied edit" not in outtext
                       and "failed to match" not in outtext and "did not conform" not in outtext)
        if interrupted:
            # the user pressed ^C while the reply streamed: aider applied none of its blocks
            bl = []
        calls = []
        failed_part = ""
        failed_searches = set()
        if "SearchReplaceNoExactMatch" in outtext or "failed to match" in outtext:
            failed_part = outtext
            for fm in re.finditer(r"## SearchReplaceNoExactMatch[^\n]*\n<<<<<<< SEARCH\n(.*?)\n?=======\n", outtext, re.S):
                failed_searches.add(fm.group(1).strip("\n").strip())
        for b in bl:
            cmd = ((b["file"] + "\n") if b["file"] else "") + b["block"]
            call = {"name": "search_replace", "args": {"command": cmd}, "result": cut(outtext)}
            err = None
            if failed_part:
                # aider lists each failed block with its SEARCH text
                srch = b["search"].strip("\n")
                if srch.strip() in failed_searches:
                    err = "SearchReplaceNoExactMatch"
            if err is None and "Fix any errors below" in outtext and "Applied edit" in outtext:
                err = "lint errors"
            if err is None and "Attempt to fix test errors" in outtext:
                err = "test errors"
            if err is not None or not OMIT_NULL_ERROR:
                call["error"] = err
            calls.append(call)
        step = {"text": s["text"], "toolCalls": calls}
        if usage:
            step["usage"] = usage
        if s["input"]:
            step["input"] = s["input"]
        m = {}
        if not bl and outtext:
            # aider output after a reply with no edit block (e.g. "did not conform", shell runs)
            m["harnessOutput"] = cut(outtext)
        if interrupted:
            m["interrupted"] = True
        if "did not conform to the edit format" in outtext and not bl:
            m["formatError"] = True
        if m:
            step["meta"] = m
        res.append(step)
    return res, meta


# OMIT_NULL_ERROR leaves "error" out of a call aider marked no failure
# (--omit-null-error, as the fresh batch's Aider runs were converted); the
# corpus's earlier runs write "error": null, which reads the same.
OMIT_NULL_ERROR = False


def main():
    global OMIT_NULL_ERROR
    args = sys.argv[1:]
    if args and args[0] == "--omit-null-error":
        OMIT_NULL_ERROR, args = True, args[1:]
    lines = sys.stdin.read().split("\n")
    ss = sessions(lines)
    if args and args[0] == "--list":
        for a, b in ss:
            steps, meta = convert(lines[a:b])
            nerr = sum(1 for s in steps for c in s["toolCalls"] if c.get("error"))
            print(a + 1, b - a, len(steps), nerr, meta.get("model", "")[:60], sep="\t")
        return
    if len(args) != 2 or args[0] != "--start":
        sys.exit("usage: aider_history.py [--omit-null-error] --start LINE | --list")
    start = int(args[1]) - 1
    for a, b in ss:
        if a == start:
            steps, meta = convert(lines[a:b])
            for s in steps:
                print(json.dumps(s, ensure_ascii=False))
            print(json.dumps(meta), file=sys.stderr)
            return
    sys.exit("no session starts at line %d" % (start + 1))


if __name__ == "__main__":
    main()
