from lsp import *
import sys
mb = float(sys.argv[1])
s = Server()
s.init()
line = "// " + "x" * 76 + "\n"
big = line * int(mb * 1e6 / len(line))
uri = "file:///tmp/lsp-probes/ws/big.op2"
t = time.time()
s.note("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "op2", "version": 1, "text": big}})
r = s.collect(300, until=lambda m: m.get("method") == "textDocument/publishDiagnostics")
m = r[-1][1]
print("%.1f MB open: published after %.1f s: %s" % (len(big)/1e6, time.time()-t, short(m["params"]["diagnostics"], 300)))
# grow it past the limit with didChange appends
for v in range(2, 5):
    s.note("textDocument/didChange", {"textDocument": {"uri": uri, "version": v}, "contentChanges": [{"range": {"start": {"line": 10**9, "character": 0}, "end": {"line": 10**9, "character": 0}}, "text": big}]})
r = s.collect(300, until=lambda m: m.get("method") == "textDocument/publishDiagnostics" and m["params"].get("version") == 4)
print("after 3 appends: %s" % short(r[-1][1], 300))
pid = [p for p in os.popen("pgrep -P %d" % s.p.pid).read().split()]
for p in pid:
    print(os.popen("grep -E 'VmRSS|VmHWM' /proc/%s/status" % p).read())
s.req(5, "workspace/executeCommand", {"command": "op2.status", "arguments": []})
print(short(s.collect(10, until=lambda m: m.get("id") == 5)[-1][1], 400))
s.close()
