from lsp import *
import sys
n = int(sys.argv[1]); pad_mb = float(sys.argv[2])
line = "// " + "y" * 76 + "\n"
with open("/tmp/lsp-probes/ws2/k.op2", "w") as f:
    f.write(line * int(pad_mb * 1e6 / len(line)))
    f.write("kernel k(const double *x) { x[0] = 1.0; }\n")
main = 'import "k.op2";\nset s;\ndat p: double on s;\nmain {\n' + "  par_loop k over s (p WRITE);\n" * n + "}\n"
s = Server(cwd="/tmp/lsp-probes/ws2")
s.init(root="/tmp/lsp-probes/ws2")
uri = "file:///tmp/lsp-probes/ws2/main.op2"
s.note("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "op2", "version": 1, "text": main}})
r = s.collect(120, until=lambda m: m.get("method") == "textDocument/publishDiagnostics" and m["params"]["uri"] == uri)
diags = r[-1][1]["params"]["diagnostics"]
print("diagnostics:", len(diags), set(d.get("code") for d in diags))
for (rid, rng) in [(10, ((4, 0), (4, 5))), (11, ((0, 0), (n + 5, 0)))]:
    t = time.time()
    s.req(rid, "textDocument/codeAction", {"textDocument": {"uri": uri}, "range": {"start": {"line": rng[0][0], "character": rng[0][1]}, "end": {"line": rng[1][0], "character": rng[1][1]}}, "context": {"diagnostics": []}})
    r = s.collect(600, until=lambda m: m.get("id") == rid)
    res = r[-1][1].get("result") or []
    print("n=%d import %.1f MB, range lines %d..%d: %d actions in %.2f s" % (n, pad_mb, rng[0][0], rng[1][0], len(res), time.time() - t))
s.close()
