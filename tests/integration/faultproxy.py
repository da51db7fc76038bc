#!/usr/bin/env python3
"""A fault-injection HTTP proxy for the remote-image tests.

faultproxy.py PORT UPSTREAM_PORT CONTROL_FILE LOG_FILE

Forwards each request (GET, HEAD; keep-alive) to 127.0.0.1:UPSTREAM_PORT
and does to it what CONTROL_FILE says, read anew for every request:
  pass          forward it
  503           answer 503 Service Unavailable
  drop          close the connection without an answer
  delay SECS    wait SECS before answering (a stalled server)
  hold          wait until CONTROL_FILE says something else, then do that
                (a stalled server that the test lets go when it is ready)
  truncate      send the headers and half the body, then close
  N MODE        MODE for the next N requests, then pass
One line per request goes to LOG_FILE: "MODE METHOD RANGE".
"""
import http.client
import socket
import socketserver
import sys
import threading
import time

PORT, UPSTREAM, CONTROL, LOG = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
lock = threading.Lock()


def next_mode():
    """The mode for this request; counts down an "N MODE" line."""
    with lock:
        try:
            words = open(CONTROL).read().split()
        except OSError:
            words = []
        if len(words) >= 2 and words[0].isdigit():
            n = int(words[0])
            rest = words[1:]
            left = [str(n - 1)] + rest if n > 1 else ["pass"]
            with open(CONTROL, "w") as f:
                f.write(" ".join(left) + "\n")
            words = rest
        return words or ["pass"]


def held():
    """Until CONTROL_FILE says other than hold."""
    while True:
        with lock:
            try:
                words = open(CONTROL).read().split()
            except OSError:
                words = []
        if words[:1] != ["hold"]:
            return
        time.sleep(0.05)


def log(line):
    with lock, open(LOG, "a") as f:
        f.write(line + "\n")


class Handler(socketserver.StreamRequestHandler):
    def handle(self):
        up = http.client.HTTPConnection("127.0.0.1", UPSTREAM, timeout=30)
        while self.one_request(up):
            pass
        up.close()

    def one_request(self, up):
        line = self.rfile.readline()
        if not line:
            return False
        method, path = line.decode().split()[:2]
        headers = {}
        while True:
            h = self.rfile.readline().decode()
            if h in ("\r\n", "\n", ""):
                break
            k, v = h.split(":", 1)
            headers[k.strip()] = v.strip()
        mode = next_mode()
        log("%s %s %s" % (mode[0], method, headers.get("Range", "-")))
        if mode[0] == "hold":
            held()
            mode = next_mode()
        if mode[0] == "drop":
            return False
        if mode[0] == "503":
            self.wfile.write(b"HTTP/1.1 503 Service Unavailable\r\n"
                             b"Content-Length: 0\r\n\r\n")
            return True
        if mode[0] == "delay":
            time.sleep(float(mode[1]))
        headers.pop("Connection", None)
        up.request(method, path, headers=headers)
        r = up.getresponse()
        body = r.read()
        out = ["HTTP/1.1 %d %s" % (r.status, r.reason)]
        for k, v in r.getheaders():
            if k.lower() not in ("connection", "transfer-encoding", "keep-alive"):
                out.append("%s: %s" % (k, v))
        head = ("\r\n".join(out) + "\r\n\r\n").encode()
        if mode[0] == "truncate" and len(body) > 1:
            self.wfile.write(head + body[:len(body) // 2])
            return False
        self.wfile.write(head + body)
        return True


class Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


Server(("127.0.0.1", PORT), Handler).serve_forever()
