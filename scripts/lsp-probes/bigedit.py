import sys, os
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lsp import *
mb = float(sys.argv[1])
s = Server()
s.init()
prog = "set cells;\ndat p: double on cells;\nkernel k(double *x) { x[0] = 1.0; }\nmain { par_loop k over cells (p WRITE); }\n"
line = "// " + "x" * 76 + "\n"
big = prog + line * int(mb * 1e6 / len(line))
uri = "file:///tmp/lsp-probes/ws/big.op2"
s.note("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "op2", "version": 1, "text": big}})
s.collect(300, until=lambda m: m.get("method") == "textDocument/publishDiagnostics")
times = []
for v in range(2, 42):
    t = time.time()
    s.note("textDocument/didChange", {"textDocument": {"uri": uri, "version": v}, "contentChanges": [{"range": {"start": {"line": 3, "character": 0}, "end": {"line": 3, "character": 0}}, "text": " "}]})
    s.collect(30, until=lambda m: m.get("method") == "textDocument/publishDiagnostics" and m["params"].get("version") == v)
    times.append(time.time() - t)
times.sort()
print("%s %.0f MB document: keystroke->diagnostics median %.1f ms, p90 %.1f ms" % (os.path.basename(os.environ.get("OP2_BIN", "op2")), mb, 1000*times[len(times)//2], 1000*times[int(len(times)*0.9)]))
s.close()
