# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The vocabulary shared by the sysfs reader and the text parsers.

Every source (sysfs, ibstat, ibstatus, ibv_devinfo, rdma link, ibdev2netdev) spells port states,
rates and GUIDs its own way; these helpers turn each spelling into the one form the facts use, so
that a port read from sysfs and the same port parsed from ``ibstat`` compare equal.
"""

from __future__ import annotations

import re

from ansible_collections.rdma.node.plugins.module_utils._lazy_re import lazy_compile

# IB port logical states (IBTA PortInfo:PortState), as the kernel prints them in ports/N/state.
PORT_STATES = {0: "NOP", 1: "DOWN", 2: "INIT", 3: "ARMED", 4: "ACTIVE", 5: "ACTIVE_DEFER"}

# IB port physical states (IBTA PortInfo:PortPhysicalState), named as ibstat names them.
PHYS_STATES = {
    0: "NoStateChange",
    1: "Sleep",
    2: "Polling",
    3: "Disabled",
    4: "PortConfigurationTraining",
    5: "LinkUp",
    6: "LinkErrorRecovery",
    7: "PhyTest",
}

# Other spellings of the same states, upper-cased with separators removed:
# ibstat "Active"/"Initializing", ibv_devinfo "PORT_ACTIVE", rdma link "LINK_UP".
_STATE_ALIASES = {
    "NOP": 0, "DOWN": 1, "INIT": 2, "INITIALIZE": 2, "INITIALIZING": 2, "ARMED": 3, "ACTIVE": 4,
    "ACTIVEDEFER": 5, "PORTNOP": 0, "PORTDOWN": 1, "PORTINIT": 2, "PORTARMED": 3, "PORTACTIVE": 4,
    "PORTACTIVEDEFER": 5,
}
_PHYS_STATE_ALIASES = dict(
    {name.upper(): code for code, name in PHYS_STATES.items()},
    NOSTATECHANGE=0, CONFIGTRAINING=4, PORTCONFIGURATIONTRAINING=4, LINKUP=5, ERRORRECOVERY=6,
)

_CODE_AND_NAME = lazy_compile(r"^\s*([0-9]{1,9})\s*:\s*(.*?)\s*$")
_RATE = lazy_compile(
    r"^\s*(?P<gbps>[0-9]{1,7}(?:\.[0-9]{1,6})?)\s*(?:Gb/sec|Gbps|Gb/s)?\s*(?:\((?P<detail>[^)]*)\))?\s*$",
    re.IGNORECASE,
)
_WIDTH = lazy_compile(r"^[0-9]{1,2}X$", re.IGNORECASE)
# Numbers are read from ASCII digits only: int() and float() also take Arabic-Indic or fullwidth
# digits and "_" separators, which no tool prints; such a value is not read rather than misread.
_ASCII_NUMBER = lazy_compile(r"^[0-9]{1,9}$")
_ASCII_LID = lazy_compile(r"^(?:0x[0-9a-f]{1,8}|[0-9]{1,10})$")


def _alias_key(text: str) -> str:
    return re.sub(r"[^A-Z0-9]", "", text.upper())


def _state(text, names, aliases):
    """Return (name, code) for a state written as ``4: ACTIVE``, ``ACTIVE``, ``PORT_ACTIVE (4)``."""
    if text is None:
        return None, None
    text = str(text).strip()
    if not text:
        return None, None
    match = _CODE_AND_NAME.match(text)
    if match:
        code = int(match.group(1))
        return names.get(code, match.group(2) or None), code
    trailing_code = re.match(r"^(.*?)\s*\(([0-9]{1,9})\)$", text)
    if trailing_code:
        code = int(trailing_code.group(2))
        return names.get(code, trailing_code.group(1)), code
    if _ASCII_NUMBER.match(text):
        code = int(text)
        return names.get(code), code
    code = aliases.get(_alias_key(text))
    if code is None:
        return text, None
    return names[code], code


def port_state(text):
    """Normalise a logical port state; returns ``(name, code)``, e.g. ``("ACTIVE", 4)``."""
    return _state(text, PORT_STATES, _STATE_ALIASES)


def phys_state(text):
    """Normalise a physical port state; returns ``(name, code)``, e.g. ``("LinkUp", 5)``.

    The code wins over the text: a tree that says ``4: ACTIVE`` in phys_state is code 4, which
    ibstat (reading the number) reports as PortConfigurationTraining.
    """
    return _state(text, PHYS_STATES, _PHYS_STATE_ALIASES)


def parse_rate(text):
    """Split a rate into ``{"rate_gbps", "width", "speed"}``.

    Accepts the sysfs form ``100 Gb/sec (4X EDR)``, ``10 Gb/sec (4X)``, ``2.5 Gb/sec (1X)`` and the
    bare number ibstat prints (``Rate: 56``), in ASCII digits. Anything else gives all three as None.
    """
    result = {"rate_gbps": None, "width": None, "speed": None}
    if text is None:
        return result
    match = _RATE.match(str(text))
    if not match:
        return result
    result["rate_gbps"] = float(match.group("gbps"))
    for word in (match.group("detail") or "").split():
        if _WIDTH.match(word):
            result["width"] = word.upper()
        elif result["speed"] is None:
            result["speed"] = word.upper()
    return result


def normalize_guid(text):
    """Return a 64-bit GUID as ``0x`` and 16 lower-case hex digits, the way ibstat prints it.

    Accepts ``0a7f:bc12:45ef:d23b`` (sysfs, ibv_devinfo), ``0xEC0D9A03000C8980`` (ibstat) and
    bare hex. Returns None for anything that is not 64 bits of hex.
    """
    if text is None:
        return None
    digits = str(text).strip().lower()
    if digits.startswith("0x"):
        digits = digits[2:]
    digits = digits.replace(":", "")
    if not digits or len(digits) > 16 or not re.fullmatch(r"[0-9a-f]+", digits):
        return None
    return "0x" + digits.rjust(16, "0")


def gid_interface_id(gid):
    """Return the port GUID held in the low 64 bits of a GID (``fe80:...:b859:9f03:00d4:0a31``)."""
    if gid is None:
        return None
    groups = str(gid).strip().lower().split(":")
    if len(groups) != 8 or not all(re.fullmatch(r"[0-9a-f]{1,4}", g) for g in groups):
        return None
    return normalize_guid("".join(g.rjust(4, "0") for g in groups[4:]))


def parse_lid(text):
    """Return a LID as an int: ``0x3`` (sysfs, ibstatus) is hex, ``3`` (ibstat) is decimal."""
    if text is None:
        return None
    text = str(text).strip().lower()
    if not _ASCII_LID.match(text):
        return None
    return int(text, 16) if text.startswith("0x") else int(text, 10)


# Longest line the text parsers read: real tool output lines are far shorter, and a bound keeps every
# pattern's work per line small whatever is pasted.
MAX_LINE = 1024
# A mail's quote marks before a pasted line ("> ", nested ">> "), with one blank after each at most:
# what follows keeps its indentation, which the lspci and perftest parsers read.
MAIL_QUOTE_MARKS = lazy_compile(r"^(?:>[ \t]?)+")
_PROMPT_CHARS = "$#%"


# A shell's name and version, as bash and sh print them in their default prompt.
_SHELL_NAME = lazy_compile(r"^-?(?:ba|z|k|da|tc|c)?sh(?:-[0-9]+(?:\.[0-9]+)*)?$")
# The arrows themes draw as the prompt (starship, oh-my-zsh, powerline), followed by a blank.
_PROMPT_ARROWS = ("\u276f ", "\u279c ", "\u2192 ", "\u03bb ")


def is_shell_prompt(line):
    """True for a shell prompt line, with or without a command after it, and for a ``#`` comment.

    ``$ ibstat``, ``# ibstat``, ``[root@node ~]# ibstat``, ``root@node:~# ibstat``, ``user@host $``,
    ``bash-5.1$ ibstat``, ``-bash-4.1# ibstat`` (a login shell), ``\u276f ibstat`` (a themed prompt),
    ``[node:~] ibstat`` (a bracketed prompt without a prompt character), and any of these after a
    virtual environment's name (``(venv) [user@host ~]$ ibstat``).
    Written without backtracking patterns so that a long line costs linear time.
    """
    if line[:1] == "(":
        line = line[_after_environment_names(line):]
    if not line:
        return False
    if line[0] in _PROMPT_CHARS or line.startswith(_PROMPT_ARROWS):
        return True
    if line[0] == "[":
        close = line.find("]")
        if close != -1:
            after = line[close + 1:]
            if after[:1].isspace():
                after = after[1:]
            if after[:1] and after[0] in _PROMPT_CHARS:
                return True
            # "[node:~] ibstat": a host and a directory in the brackets, a command after them.
            inside = line[1:close]
            if after[:1] and line[close + 1:close + 2].isspace() and (":~" in inside or inside.endswith("~")):
                return True
    token = line.split(None, 1)[0] if not line[0].isspace() else ""
    if token[-1:] in _PROMPT_CHARS and _SHELL_NAME.match(token[:-1]):
        return True  # bash's own default prompt: "bash-5.1$ ibstat", "sh-4.2# dkms status"
    marks = [token.find(char) for char in "@:~" if char in token]
    if not marks:
        return False
    if any(char in token[min(marks) + 1:] for char in _PROMPT_CHARS):
        return True
    rest = line[len(token):]
    return len(rest) >= 2 and rest[0].isspace() and rest[1] in _PROMPT_CHARS


def _after_environment_names(line):
    """Where the prompt starts after the virtual environments' names shells print before it: ``(venv) ``,
    ``((env-1.2) ) `` (nested); ``len(line)`` when the line is not such a prompt."""
    start = index = depth = 0
    while index < len(line):
        char = line[index]
        index += 1
        if char == "(":
            depth += 1
        elif char == ")" and depth:
            depth -= 1
            if depth == 0:
                if not line[index:index + 1].isspace():
                    return len(line)  # "(0) InfiniBand" is a value, "(venv)$" no prompt
                while line[index:index + 1].isspace():
                    index += 1
                start = index
                if line[index:index + 1] != "(":
                    return start
    return len(line) if depth or not start else start


def port_key(device, port):
    """The ``device/port`` name used in summaries and expectations, e.g. ``mlx5_0/1``."""
    return "%s/%s" % (device, port)
