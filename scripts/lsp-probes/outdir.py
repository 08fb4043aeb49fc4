from lsp import *
s = Server(cwd="/tmp/lsp-probes/ws3")
s.req(0, "initialize", {"processId": None, "rootUri": "file:///tmp/lsp-probes/ws3", "capabilities": {}, "initializationOptions": {"op2": {"build": {"outDir": "gen/deep"}}}})
s.collect(5, until=lambda m: m.get("id") == 0); s.note("initialized", {})
uri = "file:///tmp/lsp-probes/ws3/bad.op2"
text = "set s;\nmain { par_loop nothere over s (); }\n"
open("/tmp/lsp-probes/ws3/bad.op2", "w").write(text)
s.note("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "op2", "version": 1, "text": text}})
s.note("textDocument/didSave", {"textDocument": {"uri": uri}})
for t, m in s.collect(3):
    if m.get("method") == "window/logMessage": print(m["params"]["message"][:150])
s.close()
print(os.popen("find /tmp/lsp-probes/ws3 | sort").read())
