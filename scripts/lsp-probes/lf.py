from lsp import *
s = Server()
s.init()
a = {"jsonrpc": "2.0", "id": 1, "method": "workspace/executeCommand", "params": {"command": "op2.status", "arguments": []}}
b = {"jsonrpc": "2.0", "id": 2, "method": "workspace/executeCommand", "params": {"command": "op2.status", "arguments": []}}
print("-- LF-only frame alone")
s.send(a, crlf=False)
for t, m in s.collect(1.5): print(short(m, 200))
print("-- LF-only frame followed by a CRLF frame in one write")
s.send_raw(frame(a, crlf=False) + frame(b))
for t, m in s.collect(2.5): print(short(m, 200))
print("-- CRLF frame whose body holds a blank line (JSON whitespace) after an LF-only frame")
s.send_raw(frame(a, crlf=False) + frame(json.dumps(b).replace(",", ",\r\n\r\n", 1).encode()))
for t, m in s.collect(2.5): print(short(m, 200))
s.close()
