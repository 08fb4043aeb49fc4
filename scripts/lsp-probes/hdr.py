from lsp import *
import sys
# After a body `{}`, header blocks of 8,000 bytes, each a line of
# "content-length:" repeated (every one a place the reader tries), N MiB.
mib = float(sys.argv[1])
s = Server()
s.init()
block = b"content-length:" * 533 + b"\r\n\r\n"
junk = block * int(mib * (1 << 20) / len(block))
body = b"{}" + junk
t = time.time()
s.send_raw(b"Content-Length: %d\r\n\r\n" % len(body) + body)
s.req(7, "workspace/executeCommand", {"command": "op2.status", "arguments": []})
r = s.collect(900, until=lambda m: m.get("id") == 7)
print("header blocks %.2f MiB: next request answered after %.2f s (%s)" % (mib, time.time() - t, "answered" if any(m.get("id") == 7 for _, m in r) else "NOT answered"))
s.close()
