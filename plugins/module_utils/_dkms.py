# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parse the output of ``dkms status``, as dkms 2.x and 3.x print it.

One status line describes one module version, for one kernel and architecture once it is built::

    nvidia-304, 304.125, 3.13.0-48-generic, x86_64: installed          (dkms 2.x)
    nvidia/535.86.05, 6.5.0-060500rc5-generic, x86_64: installed        (dkms 3.x)
    zfs, 0.6.5.2: added                                                 (added, no kernel yet)
    spl/0.6.4, 5.4.0-42-generic, x86_64: installed (original_module exists)
    foo, 1.0, 4.18.0-80.el8.x86_64, x86_64: installed-weak from 4.18.0-80.el8.x86_64

dkms writes its diagnostics (``Error! ...``, ``Warning: ...``, ``Deprecated feature: ...``) to
stderr; saved outputs often mix them in. They are kept as items of their own, with the lines that
continue them up to dkms's own last line of the message (``Manual intervention is required!``,
``Consult ... for more information.``; a ``Deprecated feature:`` is one line), instead of failing
the parse. A module directory without ``dkms.conf`` makes ``dkms status`` stop at that module and
print only::

    Error! Could not locate dkms.conf file.
    File: /var/lib/dkms/broken/1.0/source/dkms.conf does not exist.

``parse_dkms_status()`` gives the result the ``rdma.node.parse_dkms_status`` filter returns:
the modules, dkms's errors and warnings apart from them, and notes on the lines it could not
place (see its docstring). Shell prompts, ``#`` comments, the ``dkms`` command line of a paste and
sudo's password prompt (``[sudo] password for USER:``) are skipped; a line of pacman.log is read
after the time and caller pacman puts before it.
"""

from __future__ import annotations

import re

from ansible_collections.rdma.node.plugins.module_utils._ib_common import MAIL_QUOTE_MARKS, MAX_LINE, is_shell_prompt
from ansible_collections.rdma.node.plugins.module_utils._lazy_re import lazy_compile

# The states dkms prints, best first: a module is usable on a kernel when it is installed there.
# dkms 3 says "broken" for a module whose source directory is gone.
STATE_RANK = ("installed", "installed-weak", "built", "added", "broken")
USABLE_STATES = ("installed", "installed-weak")

_STATE = r"(?P<state>[a-z][a-z_-]*)(?P<rest>(?:\s.*)?)"
# dkms 3.x: ``name/version[, kernel[, arch]]: state``
_DKMS3 = lazy_compile(
    r"^(?P<name>[^\s,/:]+)/(?P<version>[^\s,:]+)"
    r"(?:,\s*(?P<kernel>[^\s,:]+)(?:,\s*(?P<arch>[^\s,:]+))?)?\s*:\s*" + _STATE + r"$"
)
# dkms 2.x: ``name, version[, kernel[, arch]]: state``
_DKMS2 = lazy_compile(
    r"^(?P<name>[^\s,/:]+),\s*(?P<version>[^\s,:]+)"
    r"(?:,\s*(?P<kernel>[^\s,:]+)(?:,\s*(?P<arch>[^\s,:]+))?)?\s*:\s*" + _STATE + r"$"
)
_DIAGNOSTIC = lazy_compile(
    r"^(?P<kind>Error!|Warning:|WARNING:|Deprecated feature:)\s*(?P<message>.*)$"
)
# dkms writes its diagnostics to stderr unbuffered and its status lines to stdout: in a terminal or
# a ``2>&1`` capture a diagnostic can land inside a status line, right after the state
# (``x86_64: installedDeprecated feature: REMAKE_INITRD``), and the rest of the line after it.
_GLUED_DIAGNOSTIC = lazy_compile(r"^(?P<status>.*:\s*[a-z][a-z_-]*)(?P<diagnostic>(?:Error!|Warning:|WARNING:|Deprecated feature:).*)$")
# The suffixes dkms 3.1.3 and later print in place of "(WARNING! Diff between built and installed
# module!)" and "(WARNING! Missing some built modules!)".
_WARNING_SUFFIXES = ("differences between built and installed modules", "built modules are missing")
_WEAK_FROM = lazy_compile(r"^from\s+(?P<kernel>\S+)")
# dkms prints each of its messages as fixed lines (its error() echoes one line per argument), and another program's
# output (the module signing lines, the exit status a paste echoes, dnf's or journald's next line) follows right after the
# last one without a blank line: the lines that end dkms's messages, so that what follows them is never taken in.
# - a path then "for more information.": dkms 3's "Consult /var/lib/dkms/.../make.log for more information.", later dkms's
#   "or consult ...", dkms 2.8's "Check ... for more information." and the fourth line of its "Build of X.ko failed" text,
#   "/var/lib/dkms/MODULE/VERSION/build for more information.";
# - autoinstall's "Refer to previous errors for more information.";
# - "Manual intervention is required!" (a module "is broken!"), "This indicates that it should not be built." (a
#   BUILD_EXCLUSIVE directive; dkms 2.8 ends an earlier line's text with it) and "You may override by specifying --force.".
_LAST_LINE_OF_MESSAGE = lazy_compile(
    r"(?:^(?:(?:or )?[Cc]onsult |Check )?/\S+|^Refer to previous errors) for more information\.?$"
    r"|(?:Manual intervention is required!|This indicates that it should not be built\.|You may override by specifying --force\.)$")
# dkms's deprecated() prints one line, "Deprecated feature: NAME (FILE)": the next line is never part of it.
_ONE_LINE_KINDS = ("Deprecated feature:",)
# The summary dkms 3 autoinstall prints on stdout after its modules ("dkms autoinstall on 6.9.0-0.rc1.fc41.x86_64/x86_64
# failed for 8192eu(10)", "... succeeded for ...", "... was skipped for ..."): dkms's own result, no command line of a paste.
_AUTOINSTALL_SUMMARY = lazy_compile(r"^dkms autoinstall on \S+ (?:succeeded|was skipped|failed) for ")
# pacman writes what a hook prints (dkms's among it) to /var/log/pacman.log, each line after its time and caller:
# "[2021-09-21T00:12:44+0200] [ALPM-SCRIPTLET] Error! ...", or an older pacman's "[2019-10-07 08:50] [ALPM-SCRIPTLET] ".
_PACMAN_LOG_PREFIX = lazy_compile(r"^\[\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2})?(?:[+-]\d{2}:?\d{2}|Z)?\] \[[A-Z][A-Z-]*\] ?")

# What a paste carries besides the output: a shell prompt (``$ dkms status``,
# ``[root@node ~]# dkms status``), a ``#`` comment, the command line itself.
_COMMAND = lazy_compile(r"^(?:sudo\s+)?dkms(?:\s+(?:status|build|install|add|remove|uninstall|unbuild|autoinstall|match|mktarball"
                        r"|ldtarball|generate_mok|--version|-[a-z]|-m|-v|-k)\b.*)?$")
# The command after a prompt the paste cut or that is_shell_prompt does not know ("user@host ~]$ dkms status"). The
# arrows of pacman's hooks and makepkg ("==> dkms install ...", "  -> ...") are their messages, never a prompt.
_PROMPT_END = r"(?:[$#]|(?<![=-])>)"
_PROMPTED_COMMAND = lazy_compile(_PROMPT_END + r"\s*(?:sudo\s+)?dkms(?:\s|$)")
# sudo asks for the password on the terminal before it runs dkms, so a paste of "sudo dkms status" often holds its prompt:
# "[sudo] password for jack: " (its default prompt starts with "[sudo] " in every translation and ends with ": "). Part of
# the paste, never dkms's output.
_SUDO_PASSWORD_PROMPT = lazy_compile(r"^\[sudo\] \S.*:$")
# A run of dkms status in a paste, with or without its prompt: a later one lists the modules as they are now.
_STATUS_RUN = lazy_compile(r"(?:^|" + _PROMPT_END + r"\s*)(?:sudo\s+)?dkms\s+status\b(?P<args>[^|;&<>#]*)(?P<pipe>\|)?")
# The options of dkms status that narrow its listing, and the key of a module each one names.
_FILTER_OPTIONS = {"-m": "name", "-v": "version", "-k": "kernel", "-a": "arch"}
# What one dkms status run lists: every module (_WHOLE), only those its arguments name (a dict of the keys
# they fix), or what a command it was piped into kept (_PIPED: unknown which, so only the lines it shows
# are known to be new).
_WHOLE = None
_PIPED = "piped"
# A narrowed run drops the earlier lines it covers, a scan of them all: past this many narrowed runs (no
# real paste has them), a run only replaces the lines it shows, so that a pasted megabyte costs linear time.
_MAX_NARROWED_RUNS = 64
_REDACTED = lazy_compile(r"^(?:\.{3,}|\u2026+|[\[<(]\s*(?:\.{3}|snip(?:ped)?|redacted|cut|truncated|omitted)\s*[\]>)])$",
                         re.IGNORECASE)
_PAREN = lazy_compile(r"^\((?P<text>[^()]*)\)")


class DkmsParseError(ValueError):
    """Raised for text that is not ``dkms status`` output; the message quotes the line."""


def _item(**values):
    item = {
        "name": None,
        "version": None,
        "kernel": None,
        "arch": None,
        "state": None,
        "built_for": None,
        "warnings": [],
        "notes": [],
        "message": None,
    }
    item.update(values)
    return item


def _split_suffixes(rest):
    """Split what follows the state into ``(built_for, warnings, notes)``.

    ``from KERNEL`` follows ``installed-weak``; each ``(...)`` is a warning when it starts with
    ``WARNING!`` and a note otherwise. Returns None when other text follows: then the line is not
    a status line.
    """
    built_for = None
    warnings = []
    notes = []
    rest = rest.strip()
    weak = _WEAK_FROM.match(rest)
    if weak:
        built_for = weak.group("kernel")
        rest = rest[weak.end():].strip()
    while rest:
        paren = _PAREN.match(rest)
        if not paren:
            return None
        text = paren.group("text").strip()
        if text.upper().startswith("WARNING!"):
            warnings.append(text[len("WARNING!"):].strip())
        elif text.lower().startswith(_WARNING_SUFFIXES):
            warnings.append(text)
        elif text:
            notes.append(text)
        rest = rest[paren.end():].strip()
    return built_for, warnings, notes


def _printed(raw):
    """The line as the program printed it, indentation kept: after a byte order mark, a mail's quote marks and the time
    and caller pacman.log puts before it."""
    return _PACMAN_LOG_PREFIX.sub("", MAIL_QUOTE_MARKS.sub("", raw.lstrip("\ufeff")), count=1)


def _line(raw):
    """The text of a line of a paste, stripped (see _printed)."""
    return _printed(raw.strip()).strip()


def _indent(raw):
    """How far a line is indented (tabs and blanks alike), after a mail's quote marks and a pacman.log prefix."""
    text = _printed(raw)
    return len(text) - len(text.lstrip(" \t"))


def parse_status_line(line):
    """Parse one line; returns an item dict, or None when the line is no status line."""
    for pattern in (_DKMS3, _DKMS2):
        match = pattern.match(line)
        suffixes = _split_suffixes(match.group("rest")) if match else None
        if suffixes is not None:
            built_for, warnings, notes = suffixes
            return _item(
                name=match.group("name"),
                version=match.group("version"),
                kernel=match.group("kernel"),
                arch=match.group("arch"),
                state=match.group("state"),
                built_for=built_for,
                warnings=warnings,
                notes=notes,
            )
    return None


def _numbered_items(text):
    """Yield ``(line_number, item)`` per status line, diagnostic or unplaced line of ``text``.

    A diagnostic carries the number of its first line. Prompts, comments and the command line are
    skipped; a redaction mark (``...``, ``[snip]``) is an item with the state ``redacted``.
    """
    diagnostic = None
    cut_module = None  # a status line a diagnostic was glued into: its suffixes may follow alone
    for number, raw in enumerate(text.splitlines(), start=1):
        line = _line(raw)
        if len(line) > MAX_LINE:
            if diagnostic is not None:
                yield diagnostic
                diagnostic = None
            yield number, _item(state="unparsed", message=line)
            continue
        suffixes = _split_suffixes(line) if cut_module is not None and line.startswith("(") else None
        if suffixes is not None:
            cut_module["warnings"].extend(suffixes[1])
            cut_module["notes"].extend(suffixes[2])
            cut_module = None
            continue
        if line:
            cut_module = None
        item = parse_status_line(line) if line else None
        glued = _GLUED_DIAGNOSTIC.match(line) if line and item is None else None
        if glued and parse_status_line(glued.group("status")) is not None:
            if diagnostic is not None:
                yield diagnostic
                diagnostic = None
            cut_module = parse_status_line(glued.group("status"))
            yield number, cut_module
            line = glued.group("diagnostic")
        if (item is not None or not line) and diagnostic is not None:
            yield diagnostic
            diagnostic = None
        if not line:
            continue
        if item is not None:
            yield number, item
            continue
        match = _DIAGNOSTIC.match(line)
        if match:
            if diagnostic is not None:
                yield diagnostic
            kind = match.group("kind")
            message = match.group("message").strip()
            if kind == "Deprecated feature:":
                message = "Deprecated feature: " + message
            diagnostic = (number, _item(state="error" if kind == "Error!" else "warning", message=message))
            diagnostic_indent = _indent(raw)
            if kind in _ONE_LINE_KINDS or _LAST_LINE_OF_MESSAGE.search(message):
                yield diagnostic
                diagnostic = None
            # Otherwise held back until its continuation lines are known.
            continue
        summary = _AUTOINSTALL_SUMMARY.match(line)
        pasted = not summary and (is_shell_prompt(line) or _COMMAND.match(line) or _PROMPTED_COMMAND.search(line)
                                  or _SUDO_PASSWORD_PROMPT.match(line))
        redacted = _REDACTED.match(line)
        if diagnostic is not None and (pasted or redacted or summary or _indent(raw) > diagnostic_indent or line.startswith("==> ")):
            # A prompt, a redaction mark, dkms's autoinstall summary, a line indented deeper than the message (dkms
            # never indents the rest of one; another tool's output run in the same command, such as lshw's device
            # tree, does) or a pacman hook's "==> " line ends the message.
            yield diagnostic
            diagnostic = None
        if diagnostic is not None:
            diagnostic[1]["message"] = (diagnostic[1]["message"] + " " + line).strip()
            if _LAST_LINE_OF_MESSAGE.search(line):
                # dkms's own last line of the message: what follows is another program's, or a message of its own.
                yield diagnostic
                diagnostic = None
            continue
        if pasted:
            continue
        if redacted:
            yield number, _item(state="redacted", message=line)
            continue
        yield number, _item(state="unparsed", message=line)
    if diagnostic is not None:
        yield diagnostic


def iter_status(text):
    """Yield one item per status line or diagnostic of ``text``.

    Items are dicts with the same keys: ``name``, ``version``, ``kernel`` and ``arch`` (None where
    the line has none, as for ``added``), ``state`` (as printed, lower-case: ``installed``,
    ``built``, ``added``, ``installed-weak``...), ``built_for`` (the kernel an ``installed-weak``
    module was built for), ``warnings`` and ``notes`` (the parenthesised suffixes) and ``message``.
    Diagnostics have the state ``error`` or ``warning`` and their text, continuation lines
    included, in ``message``. A line that is neither gets the state ``unparsed`` (``redacted``
    for a redaction mark) and the line itself as ``message``.
    """
    for dummy, item in _numbered_items(text):
        yield item


def parse_status(text, strict=True):
    """Return the list of items of ``dkms status`` output (see ``iter_status``).

    Empty text gives ``[]``. With ``strict``, a line that is not dkms output raises
    ``DkmsParseError`` quoting the first such line; without it, such lines stay in the list
    with the state ``unparsed``.
    """
    if text is None:
        return []
    items = []
    for item in iter_status(text):
        if strict and item["state"] in ("unparsed", "redacted"):
            raise DkmsParseError(
                "this is not dkms status output: cannot place the line %r" % item["message"]
            )
        items.append(item)
    return items


def parse_dkms_status(text, strict=False):
    """Split ``dkms status`` (or dkms build) output into modules, errors, warnings and notes.

    Returns ``{"modules": [...], "errors": [...], "warnings": [...], "notes": [...]}``:
    ``modules`` holds the status lines as items (see ``iter_status``), nothing else; ``errors``
    and ``warnings`` hold dkms's ``Error!`` and ``Warning:``/``Deprecated feature:`` messages as
    ``{"line": N, "message": ...}`` with their continuation lines joined (up to dkms's own last line of the
    message); ``notes`` holds every
    line that could not be placed as ``{"line": N, "text": ..., "reason": ...}`` (1-based line
    numbers). Output that holds only errors gives the errors and no module.

    A paste of several ``dkms status`` runs (with the commands run between them) is read run by run,
    with a note at each run that changes what an earlier one listed: a run of every module lists the
    node as it is now (what came before it is left out); a run narrowed to some modules (``dkms status
    xone``, ``-m``, ``-k``) or piped into another command (``| grep``) updates the modules it lists and
    keeps the rest. A run followed directly by the next prompt printed nothing: no module, as dkms says when it
    knows none. Raises ``DkmsParseError`` with ``strict`` at the first line that could not be placed,
    and in any case when lines are there but none is a status line, a dkms diagnostic or such an empty run.
    """
    result = {"modules": [], "errors": [], "warnings": [], "notes": []}
    first_unplaced = None
    runs = []
    printed_nothing = False  # a run that printed no line: dkms knows no module, which is dkms's answer, not foreign text
    waiting = False  # a run seen, the line after it not yet
    for number, raw in enumerate((text or "").splitlines(), start=1):
        line = _line(raw) if len(raw) <= MAX_LINE else ""
        run = _STATUS_RUN.search(line)
        if waiting and line and not _SUDO_PASSWORD_PROMPT.match(line):
            # The first line after the run: where it is the next prompt or command, the run printed nothing.
            printed_nothing = printed_nothing or bool(run or is_shell_prompt(line) or _COMMAND.match(line) or _PROMPTED_COMMAND.search(line))
            waiting = False
        if run:
            runs.append((number, line, _run_scope(run)))
            waiting = True
    # The text before the first run is read with it (a paste that cut the prompt, or has none).
    segments = [(number, line, scope, []) for number, line, scope in runs] or [(0, None, _WHOLE, [])]
    at = 0
    for number, item in _numbered_items(text or ""):
        while at + 1 < len(segments) and segments[at + 1][0] <= number:
            at += 1
        state = item["state"]
        if state in ("unparsed", "redacted"):
            if strict:
                raise DkmsParseError("line %d is not dkms status output: %r" % (number, _shown(item["message"])))
            if state == "unparsed" and first_unplaced is None:
                first_unplaced = (number, item["message"])
            result["notes"].append({
                "line": number,
                "text": _shown(item["message"]),
                "reason": "not dkms status output" if state == "unparsed"
                else "a redaction mark: the listing around it is incomplete",
            })
        else:
            segments[at][3].append((number, item))
    modules = {}  # (name, version, kernel, arch) -> the lines of that module, in the order first seen
    narrowed = 0
    for number, line, scope, items in segments:
        if scope is not _WHOLE and scope is not _PIPED:
            narrowed += 1
            scope = scope if narrowed <= _MAX_NARROWED_RUNS else _PIPED
        modules = _fold_run(result, modules, number, line, scope, items)
    result["modules"] = [item for lines in modules.values() for item in lines]
    result["notes"].sort(key=lambda note: note["line"])
    recognised = result["modules"] or result["errors"] or result["warnings"] or printed_nothing
    if not recognised and first_unplaced is not None:
        raise DkmsParseError("nothing in the text is dkms status output (line %d: %r)" % (
            first_unplaced[0], _shown(first_unplaced[1])))
    return result


def status_of_node(text):
    """What ``dkms status`` text says of the node, as the driver's facts and warnings read it: ``{"modules",
    "errors", "warnings", "unplaced", "redacted"}`` (messages; ``unplaced``: the lines that are not dkms output,
    ``redacted``: redaction marks), read run by run as :func:`parse_dkms_status` reads it, so that a saved paste
    of two runs gives what the last one says."""
    items = list(iter_status(text or ""))
    try:
        parsed = parse_dkms_status(text or "", strict=False)
    except DkmsParseError:
        parsed = {"modules": [], "errors": [], "warnings": []}  # lines, none of them dkms's: each is unplaced
    return {"modules": parsed["modules"], "errors": [error["message"] for error in parsed["errors"]],
            "warnings": [warning["message"] for warning in parsed["warnings"]],
            "unplaced": [item["message"] for item in items if item["state"] == "unparsed"],
            "redacted": [item["message"] for item in items if item["state"] == "redacted"]}


def _run_scope(run):
    """The scope of the dkms status run ``run`` (a match of _STATUS_RUN): _WHOLE, _PIPED or the keys it names."""
    if run.group("pipe"):
        return _PIPED
    # A redirection's file descriptor ("2>&1") is not an argument.
    args = [arg for arg in run.group("args").split() if not arg.isdigit()]
    wanted = {}
    index = 0
    while index < len(args):
        arg = args[index]
        key = _FILTER_OPTIONS.get(arg)
        if key and index + 1 < len(args):
            value = args[index + 1]
            index += 2
        elif arg.startswith("-"):
            index += 1  # an option that narrows nothing (--verbose)
            continue
        else:
            key, value = "name", arg  # dkms 3: module[/version]
            index += 1
        # module/version and kernel/arch, as dkms 3 and -k take them.
        if "/" in value and key in ("name", "kernel"):
            value, wanted["version" if key == "name" else "arch"] = value.split("/", 1)
        wanted[key] = value
    return wanted or _WHOLE


def _identity(module):
    return module["name"], module["version"], module["kernel"], module["arch"]


def _fold_run(result, modules, number, line, scope, items):
    """Take the status lines and diagnostics of one run into ``result`` and ``modules`` (the module lines so
    far, by identity); returns the module lines after the run (see parse_dkms_status)."""
    listed = {}
    for dummy, item in items:
        if item["state"] not in ("error", "warning"):
            listed.setdefault(_identity(item), []).append(item)
    if scope is _WHOLE:
        earlier = sum(len(lines) for lines in modules.values()) + len(result["errors"]) + len(result["warnings"])
        if earlier:
            modules, result["errors"], result["warnings"] = {}, [], []
            result["notes"].append({"line": number, "text": _shown(line),
                                    "reason": "a later dkms status run: the %d line(s) of output before it are left out" % earlier})
    elif modules:
        for identity in listed:
            modules.pop(identity, None)
        if scope is not _PIPED:
            modules = {identity: lines for identity, lines in modules.items()
                       if any(lines[0][key] != value for key, value in scope.items())}
        result["notes"].append({"line": number, "text": _shown(line), "reason": (
            "a later dkms status run of some modules only: the %d module line(s) it lists are read from it, "
            "the other %d from the runs before" % (sum(len(lines) for lines in listed.values()),
                                                   sum(len(lines) for lines in modules.values())))})
    for item_number, item in items:
        if item["state"] in ("error", "warning"):
            result[item["state"] + "s"].append({"line": item_number, "message": item["message"]})
    for identity, lines in listed.items():
        modules.setdefault(identity, []).extend(lines)
    return modules


def _shown(line):
    return line if len(line) <= 120 else line[:117] + "..."


def state_rank(state):
    """Sort key for states: 0 for ``installed``, larger for worse, unknown states last."""
    try:
        return STATE_RANK.index(state)
    except ValueError:
        return len(STATE_RANK)


def summarize(items, names):
    """Condense parsed items into ``{name: {present, versions, kernels}}`` for the given names.

    ``kernels`` maps each kernel the module was built for to its best state over all versions and
    architectures (``installed`` beats ``installed-weak`` beats ``built``); ``versions`` lists the
    versions dkms knows, in the order it printed them.
    """
    view = {}
    for name in names:
        versions = []
        kernels = {}
        for item in items:
            if item["name"] != name:
                continue
            if item["version"] not in versions:
                versions.append(item["version"])
            kernel = item["kernel"]
            if kernel is None:
                continue
            known = kernels.get(kernel)
            if known is None or state_rank(item["state"]) < state_rank(known):
                kernels[kernel] = item["state"]
        view[name] = {"present": bool(versions), "versions": versions, "kernels": kernels}
    return view


def parse_dkms_version(text):
    """The version in ``dkms --version`` output (``dkms-3.0.10``, ``dkms: 2.8.1``), or None."""
    match = re.search(r"\d+(?:\.\d+)+", text or "")
    return match.group(0) if match else None
