# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fleet report's upload: each file sent to ``<url>/<file name>``, on the controller.

The upload is a copy of a report that is already written; it must never hide the report's verdict.
So it never raises: whatever goes wrong (a refused certificate, a server that accepts and never
answers, an HTTP error) is returned as a result that the caller reports apart from the findings,
and the hosts with critical findings still fail afterwards. Every request has a time limit.

A URL may carry a user, a password or a token in its query: ``redact_url`` is what is shown of it
anywhere (results, statistics, messages).
"""

from __future__ import annotations

import os
import urllib.parse

CONTENT_TYPES = {".json": "application/json", ".md": "text/markdown", ".html": "text/html"}
OK_STATUSES = (200, 201, 204)
HIDDEN = "REDACTED"


def redact_url(url):
    """``url`` with its user, password, query and fragment replaced by ``REDACTED``."""
    if not url:
        return url
    try:
        parts = urllib.parse.urlsplit(url)
        host = parts.hostname or ""
        port = parts.port
    except ValueError:
        return "(a URL that cannot be parsed)"
    netloc = parts.netloc
    if parts.username is not None or parts.password is not None:
        netloc = "%s@%s" % (HIDDEN, ("[%s]" % host) if ":" in host else host)
        if port is not None:
            netloc += ":%d" % port
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, HIDDEN if parts.query else "", HIDDEN if parts.fragment else ""))


def _secrets(url):
    """The parts of ``url`` that must not appear in a message, longest first."""
    try:
        parts = urllib.parse.urlsplit(url)
        found = [url, parts.netloc if "@" in parts.netloc else "", parts.query, parts.fragment,
                 parts.password or "", parts.username or "",
                 urllib.parse.unquote(parts.password or ""), urllib.parse.unquote(parts.username or "")]
    except ValueError:
        found = [url]
    # A secret of a few characters would blank out unrelated words; the messages scrubbed here are the
    # exceptions' own, which quote a URL or a host, not a lone password.
    return sorted({s for s in found if len(s) >= 4}, key=len, reverse=True)


def scrub(text, url):
    """``text`` (an error message) with every secret part of ``url`` replaced."""
    text = str(text)
    for secret in _secrets(url):
        text = text.replace(secret, HIDDEN if secret != url else redact_url(url))
    return text


def _reason(exc, timeout):
    """One line saying what went wrong with a request."""
    status = getattr(exc, "code", None)
    if isinstance(status, int):
        return "the server answered HTTP %d %s" % (status, getattr(exc, "reason", "") or "")
    reason = getattr(exc, "reason", None)  # URLError: the underlying error (TLS, refused, timed out)
    if reason is not None and not isinstance(reason, str):
        exc = reason
    text = str(exc).strip() or type(exc).__name__
    if isinstance(exc, TimeoutError) or "timed out" in text:
        return "no answer within the time limit of %g s (%s)" % (timeout, text)
    return "%s: %s" % (type(exc).__name__, text)


def upload(paths, url, method="PUT", headers=None, validate_certs=True, timeout=30):
    """Send each file of ``paths`` to ``<url>/<its name>``; stop at the first failure.

    Returns ``{"url", "ok", "files": [{"file", "status"}], "error", "not_sent": [names]}`` where
    ``url`` is redacted and ``error`` says, in one line, which file failed and why."""
    # Imported here: the HTTP client (with its TLS and certificate modules) is a tenth of a second that
    # only an upload needs, and the report's filter file, which imports redact_url, is loaded by every
    # worker process that looks up any of the collection's filters.
    from ansible.module_utils.urls import open_url

    base = url.rstrip("/")
    result = {"url": redact_url(url), "ok": True, "files": [], "error": None, "not_sent": []}
    for index, path in enumerate(paths):
        name = os.path.basename(path)
        request_headers = dict(headers or {})
        request_headers["Content-Type"] = CONTENT_TYPES.get(os.path.splitext(name)[1], "application/octet-stream")
        try:
            with open(path, "rb") as handle:
                body = handle.read()
            response = open_url("%s/%s" % (base, urllib.parse.quote(name)), data=body, method=method, headers=request_headers,
                                validate_certs=validate_certs, timeout=timeout, follow_redirects="safe", use_netrc=False)
            status = response.getcode()
            response.close()
            if status not in OK_STATUSES:
                raise ValueError("the server answered HTTP %d; expected one of %s" % (status, ", ".join(map(str, OK_STATUSES))))
        except Exception as exc:  # any failure of the copy is reported, never raised: the verdict comes first
            result.update(ok=False, error="%s of %s to %s failed: %s" % (method, name, redact_url(url), scrub(_reason(exc, timeout), url)),
                          not_sent=[os.path.basename(p) for p in paths[index:]])
            return result
        result["files"].append({"file": name, "status": status})
    return result
