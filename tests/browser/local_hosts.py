"""Two more local servers for site/, as hosts serve it, for the browser tests and scripts/bench_site.py.

`start_precompressed`: as nginx with `gzip_static on` (docs/instructors.md): a request for FILE is
answered with FILE.gz and `Content-Encoding: gzip` when the build wrote that copy and the browser
accepts gzip; everything else as sitebuild/serve.py. `start_plain`: as `python -m http.server`,
which compresses nothing. Both listen on 127.0.0.1 only and count the bytes they send
(`server.bytes_sent` and `sent_by(time)`, headers included): the browser's own figures leave out its workers' requests.
"""

import threading
import time
from functools import partial
from http.server import SimpleHTTPRequestHandler
from pathlib import Path

from sitebuild import serve


class CountingServer(serve.SiteServer):
    def __init__(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
        super().__init__(*args, **kwargs)
        self.bytes_sent = 0
        self.writes: list[tuple[float, int]] = []  # (time.time(), bytes) of every write since reset()
        self.lock = threading.Lock()

    def reset(self) -> None:
        with self.lock:
            self.bytes_sent = 0
            self.writes = []

    def count(self, n: int) -> None:
        with self.lock:
            self.bytes_sent += n
            self.writes.append((time.time(), n))

    def sent_by(self, epoch_s: float) -> int:
        """Bytes written up to `epoch_s` (time.time()): what a page had asked for until then, not
        what it fetched right after (plotly.js, once Python is ready)."""
        with self.lock:
            return sum(n for at, n in self.writes if at <= epoch_s)


class _CountingWriter:
    def __init__(self, raw, server: CountingServer) -> None:  # type: ignore[no-untyped-def]
        self.raw, self.server = raw, server

    def write(self, data: bytes) -> int:
        self.server.count(len(data))
        return self.raw.write(data)

    def __getattr__(self, name: str):  # type: ignore[no-untyped-def]
        return getattr(self.raw, name)  # flush, close, closed


class PrecompressedHandler(serve.SiteHandler):
    def setup(self) -> None:
        super().setup()
        self.wfile = _CountingWriter(self.wfile, self.server)  # type: ignore[assignment,arg-type]

    def send_head(self):  # type: ignore[no-untyped-def]
        path = Path(self.translate_path(self.path))
        copy = path.with_name(path.name + ".gz")
        if not (path.is_file() and copy.is_file() and "gzip" in self.headers.get("Accept-Encoding", "")):
            return super().send_head()
        body = copy.open("rb")
        self.send_gzip(path, copy.stat().st_size, self.date_time_string(int(path.stat().st_mtime)))
        return body


class PlainHandler(SimpleHTTPRequestHandler):
    """http.server's own handler, as `python -m http.server` runs it."""

    def setup(self) -> None:
        super().setup()
        self.wfile = _CountingWriter(self.wfile, self.server)  # type: ignore[assignment,arg-type]

    def log_message(self, format: str, *args: object) -> None:
        pass


def _start(handler: type[SimpleHTTPRequestHandler], site_dir: Path) -> CountingServer:
    server = CountingServer(("127.0.0.1", 0), partial(handler, directory=str(site_dir)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def start_precompressed(site_dir: Path) -> CountingServer:
    return _start(PrecompressedHandler, site_dir)


def start_plain(site_dir: Path) -> CountingServer:
    return _start(PlainHandler, site_dir)
