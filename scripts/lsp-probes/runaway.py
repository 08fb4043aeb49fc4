from lsp import *
GOOD = "set cells;\ndat p: double on cells;\nkernel k(double *x) { x[0] = 1.0; }\nmain { par_loop k over cells (p WRITE); }\n"
s = Server(env={"OP2_LSP_TEST_PANIC": "1", "OP2_LSP_ANALYSIS_LIMIT_MS": "2000"})
s.init()
uri = "file:///tmp/lsp-probes/ws/a.op2"
s.note("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "op2", "version": 1, "text": "// op2.test.hang\n" + GOOD}})
time.sleep(0.5)
s.note("textDocument/didClose", {"textDocument": {"uri": uri}})
s.note("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "op2", "version": 2, "text": GOOD}})
for t, m in s.collect(4):
    if m.get("method") == "textDocument/publishDiagnostics":
        p = m["params"]; print("%.2f publish v=%s n=%d %s" % (t, p.get("version"), len(p["diagnostics"]), [d["message"][:60] for d in p["diagnostics"]][:2]))
s.req(5, "textDocument/hover", {"textDocument": {"uri": uri}, "position": {"line": 0, "character": 5}})
for t, m in s.collect(2):
    if m.get("id") == 5: print("%.2f hover:" % t, short(m))
s.close()
