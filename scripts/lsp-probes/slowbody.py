from lsp import *
import sys
pause = float(sys.argv[1])
GOOD = "set cells;\ndat p: double on cells;\nkernel k(double *x) { x[0] = 1.0; }\nmain { par_loop k over cells (p WRITE); }\n"
s = Server()
s.init()
uri = "file:///tmp/lsp-probes/ws/slow.op2"
text = GOOD + ("// " + "z" * 76 + "\n") * 2000
data = frame({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {"uri": uri, "languageId": "op2", "version": 1, "text": text}}})
s.send_raw(data[:100000]); time.sleep(pause); s.send_raw(data[100000:])
s.req(5, "textDocument/documentSymbol", {"textDocument": {"uri": uri}})
for t, m in s.collect(3):
    if m.get("method") == "window/logMessage": continue
    print("pause %.1f s:" % pause, short(m, 160))
s.close()
