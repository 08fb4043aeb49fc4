import json, os, subprocess, sys, time, select, threading, queue

# Probes of `op2 lsp` over a pipe, hand-framed: each script here sends one
# sequence that a review found slow or wrong and prints what came back and
# when (docs/reliability.md, "Found by reading: the language server").
# OP2_BIN names the binary (default: this checkout's release build); the
# scripts' scratch files live under /tmp/lsp-probes.
HERE = os.path.dirname(os.path.abspath(__file__))
BIN = os.path.abspath(os.environ.get("OP2_BIN", os.path.join(HERE, "..", "..", "target", "release", "op2")))
for scratch in ("ws", "ws2", "ws3"):
    os.makedirs(os.path.join("/tmp/lsp-probes", scratch), exist_ok=True)

def frame(obj, crlf=True):
    body = obj if isinstance(obj, (bytes, bytearray)) else json.dumps(obj).encode()
    sep = b"\r\n\r\n" if crlf else b"\n\n"
    return b"Content-Length: %d" % len(body) + sep + body

class Server:
    def __init__(self, env=None, cwd=None):
        e = dict(os.environ); e.update(env or {})
        self.p = subprocess.Popen(["nice", "-n", "19", BIN, "lsp"], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=e, cwd=cwd)
        self.q = queue.Queue()
        self.t0 = time.time()
        threading.Thread(target=self._reader, daemon=True).start()
        threading.Thread(target=self._err, daemon=True).start()
    def _err(self):
        for line in self.p.stderr:
            sys.stderr.write("[stderr] " + line.decode(errors="replace"))
    def _reader(self):
        f = self.p.stdout
        while True:
            headers = b""
            while not headers.endswith(b"\r\n\r\n"):
                c = f.read(1)
                if not c:
                    self.q.put(None); return
                headers += c
            n = int([l for l in headers.split(b"\r\n") if l.lower().startswith(b"content-length")][0].split(b":")[1])
            body = f.read(n)
            self.q.put((time.time() - self.t0, json.loads(body)))
    def send_raw(self, data):
        self.p.stdin.write(data); self.p.stdin.flush()
    def send(self, obj, crlf=True):
        self.send_raw(frame(obj, crlf))
    def req(self, id, method, params=None):
        m = {"jsonrpc": "2.0", "id": id, "method": method}
        if params is not None: m["params"] = params
        self.send(m)
    def note(self, method, params=None):
        m = {"jsonrpc": "2.0", "method": method}
        if params is not None: m["params"] = params
        self.send(m)
    def collect(self, timeout, until=None):
        out = []
        end = time.time() + timeout
        while time.time() < end:
            try:
                item = self.q.get(timeout=max(0.01, end - time.time()))
            except queue.Empty:
                break
            if item is None:
                out.append((time.time()-self.t0, "EOF")); break
            out.append(item)
            if until and until(item[1]):
                break
        return out
    def init(self, root="/tmp/lsp-probes/ws", utf8=False):
        caps = {"general": {"positionEncodings": ["utf-8"]}} if utf8 else {}
        self.req(0, "initialize", {"processId": None, "rootUri": "file://" + root, "capabilities": caps})
        r = self.collect(10, until=lambda m: m.get("id") == 0)
        self.note("initialized", {})
        return r
    def close(self):
        try:
            self.req(99999, "shutdown"); self.note("exit")
        except Exception: pass
        try: self.p.wait(5)
        except Exception: self.p.kill()

def short(m, n=300):
    s = json.dumps(m)
    return s if len(s) <= n else s[:n] + "..."
