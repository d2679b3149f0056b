"""The report's upload against real servers on 127.0.0.1: it sends each file, and whatever goes wrong
(a certificate refused, a server that never answers, an HTTP error, nobody listening) comes back as one
line, never as an exception; no user, password or query of the URL is ever shown."""

from __future__ import annotations

import socket

import pytest

from ansible_collections.rdma.node.plugins.plugin_utils._fleet_report_upload import redact_url, scrub, upload
from upload_servers import SilentServer, UploadRecorder


@pytest.fixture
def report_files(tmp_path):
    paths = []
    for name, text in (("fleet-report.json", '{"hosts": []}\n'), ("fleet-report.md", "# RDMA fleet report\n")):
        (tmp_path / name).write_text(text)
        paths.append(str(tmp_path / name))
    return paths


@pytest.mark.parametrize("url, shown", [
    ("https://dav.example.org/reports/", "https://dav.example.org/reports/"),
    ("https://ci:hunter22@dav.example.org/r", "https://REDACTED@dav.example.org/r"),
    ("https://token@dav.example.org:8443/r?x=1", "https://REDACTED@dav.example.org:8443/r?REDACTED"),
    ("https://dav.example.org/r?access_token=abc#frag", "https://dav.example.org/r?REDACTED#REDACTED"),
    ("https://u:p@[fd00::1]:8443/r", "https://REDACTED@[fd00::1]:8443/r"),
    ("https://[fd00::1/r", "(a URL that cannot be parsed)"),
    ("", ""),
])
def test_redacted_url(url, shown):
    assert redact_url(url) == shown


def test_scrub_removes_every_secret_part():
    url = "https://ci-user:hunter22-pass@dav.example.org/r?token=s3cr3t-token"
    text = scrub("failed for %s (user ci-user, password hunter22-pass, token=s3cr3t-token)" % url, url)
    assert not any(secret in text for secret in ("ci-user", "hunter22-pass", "s3cr3t-token")), text
    assert "https://REDACTED@dav.example.org/r?REDACTED" in text


def test_each_file_is_sent_with_its_content_type_and_headers(report_files):
    with UploadRecorder() as server:
        result = upload(report_files, server.url + "/reports/job-7/", headers={"Authorization": "Bearer t"}, timeout=5)
    assert result == {"url": server.url + "/reports/job-7/", "ok": True, "error": None, "not_sent": [],
                      "files": [{"file": "fleet-report.json", "status": 201}, {"file": "fleet-report.md", "status": 201}]}
    assert [(r["method"], r["path"], r["headers"]["Content-Type"], r["headers"]["Authorization"]) for r in server.received] == [
        ("PUT", "/reports/job-7/fleet-report.json", "application/json", "Bearer t"),
        ("PUT", "/reports/job-7/fleet-report.md", "text/markdown", "Bearer t")]
    assert server.received[1]["body"] == b"# RDMA fleet report\n"


def test_a_self_signed_certificate_is_refused(report_files):
    with UploadRecorder(tls=True) as server:
        url = server.url.replace("https://", "https://ci:hunter22-pass@") + "/r?token=s3cr3t-token"
        result = upload(report_files, url, timeout=5)
        assert server.received == []
        # Asked for it, the same server is accepted.
        assert upload(report_files, url, validate_certs=False, timeout=5)["ok"] is True
    assert result["ok"] is False and result["not_sent"] == ["fleet-report.json", "fleet-report.md"]
    assert result["error"].startswith("PUT of fleet-report.json to https://REDACTED@127.0.0.1:%d/r?REDACTED failed: " % int(server.url.rsplit(":", 1)[1]))
    assert "CERTIFICATE_VERIFY_FAILED" in result["error"] or "certificate verify failed" in result["error"], result["error"]
    assert "hunter22-pass" not in repr(result) and "s3cr3t-token" not in repr(result)


def test_a_server_that_never_answers_is_given_up_after_the_time_limit(report_files):
    with SilentServer() as server:
        result = upload(report_files, server.url + "/r", timeout=1.5)
        assert server.accepted >= 1
    assert result["ok"] is False and result["not_sent"] == ["fleet-report.json", "fleet-report.md"]
    assert "no answer within the time limit of 1.5 s" in result["error"], result["error"]


def test_an_http_error_and_a_closed_port(report_files):
    with UploadRecorder(status=507) as server:
        result = upload(report_files, server.url, timeout=5)
    assert result["error"] == "PUT of fleet-report.json to %s failed: the server answered HTTP 507 Insufficient Storage" % server.url
    with socket.socket() as probe:  # a port that nobody listens on: bound, never listening
        probe.bind(("127.0.0.1", 0))
        closed = "http://127.0.0.1:%d" % probe.getsockname()[1]
        result = upload(report_files, closed, timeout=5)
    assert result["ok"] is False and "Connection refused" in result["error"], result["error"]
    with UploadRecorder(status=200) as server:
        assert upload(report_files, server.url, method="POST", timeout=5)["ok"] is True
        assert [r["method"] for r in server.received] == ["POST", "POST"]


def test_a_missing_file_is_a_failure_not_an_exception(tmp_path):
    with UploadRecorder() as server:
        result = upload([str(tmp_path / "fleet-report.html")], server.url, timeout=5)
    assert result["ok"] is False and "No such file or directory" in result["error"]
