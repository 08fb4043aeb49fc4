from lsp import *
import sys
n = int(sys.argv[1])
text = "main {\n" + "  x = 1.0;\n" * n + "}\n"
s = Server()
s.init()
# measure
uri0 = "file:///tmp/lsp-probes/ws/m.op2"
t = time.time()
s.note("textDocument/didOpen", {"textDocument": {"uri": uri0, "languageId": "op2", "version": 1, "text": text}})
r = s.collect(60, until=lambda m: m.get("method") == "textDocument/publishDiagnostics")
T = time.time() - t
print("open->publish %.3f s, %d diagnostics" % (T, len(r[-1][1]["params"]["diagnostics"])))
s.note("textDocument/didClose", {"textDocument": {"uri": uri0}})
s.collect(1)
bad = 0
for i in range(int(sys.argv[2])):
    uri = "file:///tmp/lsp-probes/ws/r%d.op2" % i
    d = T * (0.6 + 0.6 * (i % 20) / 20)
    s.note("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "op2", "version": 1, "text": text}})
    time.sleep(d)
    s.note("textDocument/didClose", {"textDocument": {"uri": uri}})
    last = None
    for t2, m in s.collect(max(1.0, 2*T)):
        if m.get("method") == "textDocument/publishDiagnostics" and m["params"]["uri"] == uri:
            last = len(m["params"]["diagnostics"])
    if last:
        bad += 1
        print("case %d delay %.3f: last publish after didClose has %d diagnostics" % (i, d, last))
print("stale after close: %d" % bad)
s.close()
