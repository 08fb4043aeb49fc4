from lsp import *
import sys
mib = float(sys.argv[1]); embedded = sys.argv[2] == "embedded"
s = Server()
s.init()
inner = frame({"jsonrpc": "2.0", "method": "$/x"})
n = int(mib * (1 << 20) / len(inner))
if embedded:
    body = b"{}" + inner * n
    data = b"Content-Length: %d\r\n\r\n" % len(body) + body
else:
    data = inner * n
t = time.time()
s.send_raw(data)
s.req(7, "workspace/executeCommand", {"command": "op2.status", "arguments": []})
r = s.collect(600, until=lambda m: m.get("id") == 7)
print("%s %.2f MiB (%d messages): next request answered after %.2f s" % ("embedded" if embedded else "plain", mib, n, time.time() - t))
s.close()
