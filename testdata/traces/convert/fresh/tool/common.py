"""Shared helpers for the c2 converters (Python 3 standard library only)."""
import json

LIMIT = 16 * 1024


def clip(text):
    """Keep a result verbatim unless it is over 16 KB: then its first 8 KB,
    a marker, and its last 4 KB (sizes counted in UTF-8 bytes)."""
    if text is None:
        return None
    if not isinstance(text, str):
        text = json.dumps(text, ensure_ascii=False)
    raw = text.encode("utf-8")
    if len(raw) <= LIMIT:
        return text
    head = raw[:8 * 1024].decode("utf-8", "ignore")
    tail = raw[-4 * 1024:].decode("utf-8", "ignore")
    cut = len(raw) - len(head.encode("utf-8")) - len(tail.encode("utf-8"))
    return head + "...[%d bytes cut]..." % cut + tail


def parse_args(raw):
    """Arguments as called: a JSON object when the model sent one, else the raw text."""
    if isinstance(raw, dict):
        return raw, False
    if raw is None or raw == "":
        return {}, False
    try:
        val = json.loads(raw)
    except (TypeError, ValueError):
        return {"_raw": raw}, True
    if isinstance(val, dict):
        return val, False
    return {"_raw": raw}, True


def dump(steps, out):
    for s in steps:
        out.write(json.dumps(s, ensure_ascii=False) + "\n")
