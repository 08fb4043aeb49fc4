from lsp import *
import sys
GOOD = "set cells;\ndat p: double on cells;\nkernel k(double *x) { x[0] = 1.0; }\nmain { par_loop k over cells (p WRITE); }\n"
nbig = int(sys.argv[1]); mb = float(sys.argv[2])
s = Server()
s.init()
line = "// " + "x" * 76 + "\n"
big = line * int(mb * 1e6 / len(line))
for i in range(nbig):
    s.note("textDocument/didOpen", {"textDocument": {"uri": "file:///tmp/lsp-probes/ws/big%d.op2" % i, "languageId": "op2", "version": 1, "text": big}})
got = 0
while got < nbig:
    r = s.collect(120, until=lambda m: m.get("method") == "textDocument/publishDiagnostics")
    got += 1
uri = "file:///tmp/lsp-probes/ws/small.op2"
s.note("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "op2", "version": 1, "text": GOOD}})
s.collect(10, until=lambda m: m.get("method") == "textDocument/publishDiagnostics" and m["params"]["uri"] == uri)
times = []
for v in range(2, 32):
    t = time.time()
    s.note("textDocument/didChange", {"textDocument": {"uri": uri, "version": v}, "contentChanges": [{"range": {"start": {"line": 4, "character": 0}, "end": {"line": 4, "character": 0}}, "text": " "}]})
    s.collect(10, until=lambda m: m.get("method") == "textDocument/publishDiagnostics" and m["params"].get("version") == v)
    times.append(time.time() - t)
times.sort()
print("big docs %d x %.0f MB: keystroke->diagnostics median %.1f ms, max %.1f ms" % (nbig, mb, 1000*times[len(times)//2], 1000*times[-1]))
s.close()
