#!/usr/bin/env python3
"""A small S3-compatible server for the remote-image tests that checks
every request's AWS Signature Version 4.

s3server.py PORT ROOT REGION ACCESS_KEY SECRET [TOKEN] LOG

Serves ROOT/BUCKET/KEY read-only (HEAD, GET with one Range) in path style
(/BUCKET/KEY) and virtual-host style (Host: BUCKET.localhost).  A request
whose signature, credential scope, region, key or session token is wrong
gets 403 SignatureDoesNotMatch/InvalidAccessKeyId.  The signature check is
first run on the documented AWS example (GET Object, examplebucket), and
the server refuses to start if it does not give the documented signature.
One line per request goes to LOG: "STYLE METHOD /BUCKET/KEY STATUS [ERROR]".
"""
import hashlib
import hmac
import http.server
import os
import socketserver
import sys
import urllib.parse
from email.utils import formatdate

PORT, ROOT, REGION, AK, SK = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5]
TOKEN = sys.argv[6] if len(sys.argv) > 7 else None
LOG = sys.argv[-1]


def sign(secret, method, path, query, headers, signed, amzdate, scope):
    """The SigV4 signature of a request (S3: the path is encoded once)."""
    canon_q = "&".join(sorted(
        "%s=%s" % (urllib.parse.quote(k, safe="-_.~"), urllib.parse.quote(v, safe="-_.~"))
        for k, v in urllib.parse.parse_qsl(query, keep_blank_values=True)))
    canon_h = "".join("%s:%s\n" % (h, " ".join(headers[h].split())) for h in signed)
    creq = "\n".join([method, urllib.parse.quote(path, safe="/-_.~"), canon_q,
                      canon_h, ";".join(signed), headers["x-amz-content-sha256"]])
    sts = "\n".join(["AWS4-HMAC-SHA256", amzdate, scope,
                     hashlib.sha256(creq.encode()).hexdigest()])
    key = ("AWS4" + secret).encode()
    for part in scope.split("/"):
        key = hmac.new(key, part.encode(), hashlib.sha256).digest()
    return hmac.new(key, sts.encode(), hashlib.sha256).hexdigest()


def self_test():
    """The AWS documentation's GET Object example."""
    h = {"host": "examplebucket.s3.amazonaws.com", "range": "bytes=0-9",
         "x-amz-content-sha256": hashlib.sha256(b"").hexdigest(),
         "x-amz-date": "20130524T000000Z"}
    got = sign("wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "GET", "/test.txt", "",
               h, sorted(h), "20130524T000000Z", "20130524/us-east-1/s3/aws4_request")
    want = "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"
    if got != want:
        sys.exit("s3server: the SigV4 check fails the AWS example: %s" % got)


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def reply(self, status, body=b"", headers=()):
        # logged before the reply: a client that gives up on it (a wrong
        # region) may be followed at once by the test reading the log
        with open(LOG, "a") as f:
            f.write("%s %s %s %d%s\n" % (self.style, self.command, self.object, status,
                                          " " + self.code if self.code else ""))
        self.send_response(status)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def error(self, status, code):
        self.code = code
        self.reply(status, ("<Error><Code>%s</Code></Error>" % code).encode())

    def check_auth(self):
        auth = self.headers.get("Authorization", "")
        if not auth.startswith("AWS4-HMAC-SHA256 "):
            return "AccessDenied"
        fields = dict(p.strip().split("=", 1) for p in auth[17:].split(","))
        ak, scope = fields["Credential"].split("/", 1)
        if ak != AK:
            return "InvalidAccessKeyId"
        if scope.split("/")[1:] != [REGION, "s3", "aws4_request"]:
            return "AuthorizationHeaderMalformed"
        signed = fields["SignedHeaders"].split(";")
        h = {k.lower(): v for k, v in self.headers.items()}
        if "x-amz-content-sha256" not in signed or "host" not in signed:
            return "AccessDenied"
        if TOKEN and (h.get("x-amz-security-token") != TOKEN or
                      "x-amz-security-token" not in signed):
            return "InvalidToken"
        url = urllib.parse.urlsplit(self.path)
        want = sign(SK, self.command, url.path, url.query, h, signed,
                    h["x-amz-date"], scope)
        return None if hmac.compare_digest(want, fields["Signature"]) else "SignatureDoesNotMatch"

    def locate(self):
        host = self.headers.get("Host", "").split(":")[0]
        path = urllib.parse.unquote(urllib.parse.urlsplit(self.path).path)
        if host.endswith(".localhost"):
            self.style = "virtual"
            return "/" + host[:-len(".localhost")] + path
        self.style = "path"
        return path

    def do_HEAD(self):
        self.do_GET()

    def do_GET(self):
        self.style, self.object, self.code = "-", "-", None
        self.object = self.locate()
        bad = self.check_auth()
        if bad:
            return self.error(403, bad)
        path = os.path.join(ROOT, self.object.lstrip("/"))
        if ".." in self.object.split("/") or not os.path.isfile(path):
            return self.error(404, "NoSuchKey")
        st = os.stat(path)
        etag = '"%x-%x"' % (st.st_mtime_ns, st.st_size)
        im = self.headers.get("If-Match")
        if im and im != etag:
            return self.error(412, "PreconditionFailed")
        hdrs = [("ETag", etag), ("Last-Modified", formatdate(st.st_mtime, usegmt=True)),
                ("Accept-Ranges", "bytes")]
        rng = self.headers.get("Range")
        with open(path, "rb") as f:
            if self.command == "HEAD":
                self.send_response(200)
                for k, v in hdrs:
                    self.send_header(k, v)
                self.send_header("Content-Length", str(st.st_size))
                self.end_headers()
                with open(LOG, "a") as lf:
                    lf.write("%s HEAD %s 200\n" % (self.style, self.object))
                return
            if not rng:
                return self.reply(200, f.read(), hdrs)
            a, b = rng[6:].split("-")
            a, b = int(a), min(int(b), st.st_size - 1)
            f.seek(a)
            hdrs.append(("Content-Range", "bytes %d-%d/%d" % (a, b, st.st_size)))
            self.reply(206, f.read(b - a + 1), hdrs)


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True


self_test()
Server(("127.0.0.1", PORT), Handler).serve_forever()
