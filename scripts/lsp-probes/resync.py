from lsp import *
import sys
# A body `{}` followed by N times "content-length " (no header end anywhere):
# after the body is given back, the reader steps from one to the next.
mib = float(sys.argv[1])
s = Server()
s.init()
junk = b"content-length " * int(mib * (1 << 20) / 15)
body = b"{}" + junk
t = time.time()
s.send_raw(b"Content-Length: %d\r\n\r\n" % len(body) + body)
s.req(7, "workspace/executeCommand", {"command": "op2.status", "arguments": []})
r = s.collect(600, until=lambda m: m.get("id") == 7)
print("resync %.2f MiB: next request answered after %.2f s (%s)" % (mib, time.time() - t, "answered" if any(m.get("id") == 7 for _, m in r) else "NOT answered"))
s.close()
