"""A small static server for site/: right MIME types (.wasm, .mjs), gzip for text, and revalidation.

Pyodide hangs without an error when `.wasm` arrives with the wrong type, and a module worker cannot
start from file://, so the site is always served; the tests and the benchmark use this server too.
"""

import gzip
import io
import os
import sys
import threading
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

TYPES = {
    ".wasm": "application/wasm",
    ".mjs": "text/javascript",
    ".js": "text/javascript",
    ".json": "application/json",
    ".zip": "application/zip",
    ".woff2": "font/woff2",
    ".svg": "image/svg+xml",
    ".xml": "application/xml",
}
COMPRESSIBLE = {".html", ".js", ".mjs", ".css", ".json", ".svg", ".xml", ".txt", ".map"}


class SiteHandler(SimpleHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    extensions_map = {**SimpleHTTPRequestHandler.extensions_map, **TYPES}
    # path -> (mtime, gzip bytes), shared by the handler threads; a rebuilt file replaces its entry.
    _gzip_cache: dict[str, tuple[float, bytes]] = {}

    def end_headers(self) -> None:
        # Revalidate every time (the dev server rebuilds in place); 304s keep the cache useful.
        self.send_header("Cache-Control", "no-cache")
        super().end_headers()

    def send_head(self):  # type: ignore[no-untyped-def]
        path = Path(self.translate_path(self.path))
        if path.is_dir() and self.path.split("?", 1)[0].endswith("/"):  # else the base class redirects
            path = path / "index.html"
        if not ("gzip" in self.headers.get("Accept-Encoding", "") and path.suffix in COMPRESSIBLE and path.is_file()):
            return super().send_head()
        stat = path.stat()
        modified = self.date_time_string(int(stat.st_mtime))
        if self.headers.get("If-Modified-Since") == modified:
            self.send_response(304)
            self.end_headers()
            return None
        cached = self._gzip_cache.get(str(path))
        if cached is None or cached[0] != stat.st_mtime:
            cached = (stat.st_mtime, gzip.compress(path.read_bytes(), compresslevel=6, mtime=0))
            self._gzip_cache[str(path)] = cached
        self.send_gzip(path, len(cached[1]), modified)
        return io.BytesIO(cached[1])

    def send_gzip(self, path: Path, length: int, modified: str) -> None:
        """The 200 headers of `path` sent as `length` bytes of gzip."""
        self.send_response(200)
        self.send_header("Content-Type", self.guess_type(str(path)))
        self.send_header("Content-Encoding", "gzip")
        self.send_header("Vary", "Accept-Encoding")
        self.send_header("Content-Length", str(length))
        self.send_header("Last-Modified", modified)
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        if os.environ.get("COURSE_SERVER_LOG"):
            super().log_message(format, *args)


class SiteServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):  # type: ignore[no-untyped-def]
        # A browser that drops a connection it no longer needs is not an error worth a traceback.
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


def start(site_dir: Path, port: int = 0) -> ThreadingHTTPServer:
    """Serve site_dir on localhost in a daemon thread; port 0 picks a free port (read server.server_port)."""
    server = SiteServer(("127.0.0.1", port), partial(SiteHandler, directory=str(site_dir)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server
