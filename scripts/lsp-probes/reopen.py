from lsp import *
import sys
GOOD = "set cells;\ndat p: double on cells;\nkernel k(double *x) { x[0] = 1.0; }\nmain { par_loop k over cells (p WRITE); }\n"
ERR = "set zzz;\ndat q: double on nowhere;\nkernel kk(double *x) { x[0] = 1.0; }\nmain { par_loop kk over zzz (q WRITE); }\n"
mode = sys.argv[1]
s = Server(env={"OP2_LSP_TEST_PANIC": "1"})
s.init()
uri = "file:///tmp/lsp-probes/ws/a.op2"
hang = "// op2.test.hang\n"
s.note("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "op2", "version": 1, "text": hang + ERR}})
time.sleep(0.5)
if mode == "close":
    s.note("textDocument/didClose", {"textDocument": {"uri": uri}})
new_text = (hang + GOOD) if sys.argv[2] == "hang" else GOOD
s.note("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "op2", "version": 2, "text": new_text}})
for t, m in s.collect(12):
    if m.get("method") == "textDocument/publishDiagnostics":
        p = m["params"]; print("%.2f publish v=%s n=%d %s" % (t, p.get("version"), len(p["diagnostics"]), [d["message"][:40] for d in p["diagnostics"]][:2]))
    elif m.get("method") != "window/logMessage":
        print("%.2f" % t, short(m))
s.req(5, "textDocument/documentSymbol", {"textDocument": {"uri": uri}})
s.req(6, "workspace/executeCommand", {"command": "op2.status", "arguments": []})
for t, m in s.collect(3):
    if m.get("id") == 5:
        print("%.2f symbols:" % t, [x["name"] for x in (m.get("result") or [])], m.get("error"))
    elif m.get("id") == 6:
        print("%.2f status:" % t, short(m["result"], 600))
    elif m.get("method") == "textDocument/publishDiagnostics":
        p = m["params"]; print("%.2f publish v=%s n=%d" % (t, p.get("version"), len(p["diagnostics"])))
s.close()
