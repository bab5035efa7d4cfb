import json,sys
for f in sys.argv[1:]:
    print('#####',f)
    for i,l in enumerate(open(f),1):
        s=json.loads(l)
        if s.get('input'): print(f'{i:3d} IN: '+s['input'][:300].replace('\n',' '))
        if s.get('text'): print(f'{i:3d} TX: '+s['text'][:400].replace('\n',' '))
        for c in s.get('toolCalls',[]):
            print(f'{i:3d} CALL {c["name"]} {json.dumps(c["args"])[:300]}')
            r=c.get('result')
            print(f'      -> {"ERR " if c.get("error") else ""}{(r or "<none>")[:200]!r}')
        m=s.get('meta')
        if m: print('     META',json.dumps(m)[:300])
