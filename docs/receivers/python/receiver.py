#!/usr/bin/env python3
"""Reference webhook receiver for Sluice (Python 3.8+, standard library only).

Verifies X-Signature = hex HMAC-SHA1(SHARED_SECRET, raw body) with a
constant-time comparison. Always verify the raw bytes: re-serializing with
json.dumps would not reproduce them (different spacing, escaping of
non-ASCII, and float formatting).

Env: PORT (0 picks a free port), SHARED_SECRET (required).
Answers 200 when valid, 401 when not; prints one JSON line per request:
  {"valid":true,"messageId":"...","type":"track"}
(messageId/type are null when the body has none). Diagnostics go to stderr.
"""

import hashlib
import hmac
import json
import os
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MAX_BODY_BYTES = 1 << 20  # Sluice caps messages far below this.
# ThreadingHTTPServer handles requests concurrently; print() writes the text
# and the newline separately, so lines are written whole under a lock.
STDOUT_LOCK = threading.Lock()


def field(message, key):
    value = message.get(key) if isinstance(message, dict) else None
    return value if isinstance(value, str) else None


class Receiver(BaseHTTPRequestHandler):
    secret = b""

    def do_POST(self):
        try:
            length = int(self.headers.get("Content-Length", ""))
        except ValueError:
            self.send_error(411, "Content-Length required")
            return
        if length < 0 or length > MAX_BODY_BYTES:
            self.send_error(413)
            return
        raw = self.rfile.read(length)

        expected = hmac.new(self.secret, raw, hashlib.sha1).hexdigest()
        received = self.headers.get("X-Signature", "").lower()
        valid = hmac.compare_digest(expected.encode(), received.encode())

        try:
            message = json.loads(raw)
        except ValueError:
            message = None
        line = {"valid": valid, "messageId": field(message, "messageId"), "type": field(message, "type")}
        with STDOUT_LOCK:
            sys.stdout.write(json.dumps(line, separators=(",", ":")) + "\n")
            sys.stdout.flush()

        status, text = (200, b"ok\n") if valid else (401, b"invalid signature\n")
        self.send_response(status)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(text)))
        self.end_headers()
        self.wfile.write(text)

    def log_message(self, format, *args):  # keep stdout for the JSON lines
        sys.stderr.write("%s - %s\n" % (self.address_string(), format % args))


def main():
    secret = os.environ.get("SHARED_SECRET", "")
    if not secret:
        sys.exit("SHARED_SECRET is required")
    try:
        port = int(os.environ.get("PORT", ""))
    except ValueError:
        sys.exit("PORT must be a port number (0 picks a free one)")
    Receiver.secret = secret.encode("utf-8")
    server = ThreadingHTTPServer(("127.0.0.1", port), Receiver)
    print("listening on 127.0.0.1:%d" % server.server_address[1], file=sys.stderr, flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


if __name__ == "__main__":
    main()
