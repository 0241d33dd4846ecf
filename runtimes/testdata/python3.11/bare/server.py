"""Bare http.server baseline for BenchmarkWrapper: same answer as the sample's "/"."""
import http.server
import os

BODY = b'{"ok":true}'


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def log_message(self, format, *args):
        pass

    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(BODY)))
        self.end_headers()
        self.wfile.write(BODY)


class Server(http.server.ThreadingHTTPServer):
    request_queue_size = 128


Server(("127.0.0.1", int(os.environ["PORT"])), Handler).serve_forever()
