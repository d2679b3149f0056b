"""Servers on 127.0.0.1 that the report's upload talks to in tests: what stands in for a WebDAV folder or
an artifact repository, and the ways such a server fails.

* ``UploadRecorder``: keeps every PUT/POST (path, headers, body) and answers 201, or ``status``.
* ``UploadRecorder(tls=True)``: the same behind TLS with a self-signed certificate (made with the cryptography library),
  which a client that validates certificates refuses.
* ``SilentServer``: accepts connections and never answers.

Each is a context manager; leaving it stops its thread and closes its sockets.
"""

from __future__ import annotations

import socket
import datetime
import ipaddress
import ssl
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path


def self_signed_certificate(directory):
    """``(certificate, key)`` paths of a fresh self-signed certificate for 127.0.0.1, made with the
    cryptography library that ansible-core depends on (no openssl command needed)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    cert, key = Path(directory) / "cert.pem", Path(directory) / "key.pem"
    private = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.timezone.utc)
    certificate = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(private.public_key())
                   .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
                   .not_valid_after(now + datetime.timedelta(days=1))
                   .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
                   .sign(private, hashes.SHA256()))
    key.write_bytes(private.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    cert.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    return cert, key


class UploadRecorder:
    """A tiny HTTP server on 127.0.0.1 that keeps every PUT/POST it gets (path, headers, body) and answers ``status``."""

    def __init__(self, tls=False, status=201):
        self.received = []
        recorder = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format, *args):  # pylint: disable=redefined-builtin
                """Quiet: the list is the record."""

            def _store(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                recorder.received.append({"method": self.command, "path": self.path, "headers": dict(self.headers), "body": body})
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            do_PUT = do_POST = _store  # noqa: N815 (http.server's naming)

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._scheme = "http"
        if tls:
            self._certs = tempfile.TemporaryDirectory(prefix="rdma-node-tls-")
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(*self_signed_certificate(self._certs.name))
            self._httpd.socket = context.wrap_socket(self._httpd.socket, server_side=True)
            self._scheme = "https"
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="upload-recorder", daemon=True)

    @property
    def url(self):
        return "%s://127.0.0.1:%d" % (self._scheme, self._httpd.server_address[1])

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=10)
        if self._scheme == "https":
            self._certs.cleanup()


class SilentServer:
    """Accepts TCP connections on 127.0.0.1 and never answers: a server that hangs."""

    def __init__(self):
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(16)
        self._listener.settimeout(0.2)
        self._held = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._accept, name="silent-server", daemon=True)
        self.accepted = 0

    def _accept(self):
        while not self._stop.is_set():
            try:
                connection, _address = self._listener.accept()
            except (socket.timeout, OSError):
                continue
            self._held.append(connection)
            self.accepted += 1

    @property
    def url(self):
        return "http://127.0.0.1:%d" % self._listener.getsockname()[1]

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join(timeout=10)
        for connection in self._held:
            connection.close()
        self._listener.close()
