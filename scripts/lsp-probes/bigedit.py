# bigedit.py MB MODE WHERE: a keystroke in a large document, from didChange to its
# diagnostics, twenty times (median). MODE: `comments` (a small program, then MB of
# comment lines) or `code` (a main of `int a = 1;` statements); WHERE: `top` or `middle`.
import sys, os
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lsp import *
mb = float(sys.argv[1]); mode = sys.argv[2]; where = sys.argv[3]
s = Server()
s.init()
n = int(mb * 1e6 / 80)
if mode == "comments":
    body = "// " + "x" * 76 + "\n"
    text = "set cells;\ndat p: double on cells;\nkernel k(double *x) { x[0] = 1.0; }\nmain { par_loop k over cells (p WRITE); }\n" + body * n
    line = 3 if where == "top" else 4 + n // 2
else:
    text = "set cells;\nmain {\n" + "    int a = 1;\n" * n + "}\n"
    line = 2 if where == "top" else 2 + n // 2
uri = "file:///tmp/lsp-probes/ws/big.op2"
s.note("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "op2", "version": 1, "text": text}})
s.collect(300, until=lambda m: m.get("method") == "textDocument/publishDiagnostics")
times = []
for v in range(2, 22):
    t = time.time()
    s.note("textDocument/didChange", {"textDocument": {"uri": uri, "version": v}, "contentChanges": [{"range": {"start": {"line": line, "character": 0}, "end": {"line": line, "character": 0}}, "text": " "}]})
    s.collect(30, until=lambda m: m.get("method") == "textDocument/publishDiagnostics" and m["params"].get("version") == v)
    times.append(time.time() - t)
times.sort()
print("%s %.0f MB %s, edit at %s: median %.1f ms" % (os.path.basename(os.environ.get("OP2_BIN","op2")), mb, mode, where, 1000*times[len(times)//2]))
s.close()
