# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a node's RDMA driver stack looks like, read from files under a root directory.

The kernels (running, installed, the one the boot loader starts next), the loaded kernel modules
with their versions, the OFED release and the ``/dev/infiniband`` nodes. Every file is read through
``read_text(root, path)`` so that tests and simulated nodes point ``root`` at a tree. Command output
(``dkms status``, ``ofed_info -s``) comes in as text: running commands is the module's business.
"""

from __future__ import annotations

import fnmatch
import os
import re
import shlex
import stat

from ansible_collections.rdma.node.plugins.module_utils._dkms import status_of_node, summarize
from ansible_collections.rdma.node.plugins.module_utils._files import read_lenient, text_names
from ansible_collections.rdma.node.plugins.module_utils._ib_common import is_shell_prompt
from ansible_collections.rdma.node.plugins.module_utils._lazy_re import lazy_compile
from ansible_collections.rdma.node.plugins.module_utils._numbers import parse_int, parse_uint

# Names of kernel images in /boot (x86 vmlinuz, ppc64 vmlinux, arm64 Image on some distros, Gentoo's kernel- and
# genkernel's kernel-genkernel-ARCH-, both of which GRUB's 10_linux lists), and the release in them.
# A copy of the same kernel keeps its release: Ubuntu's signed image for Secure Boot (vmlinuz-X.efi.signed), SUSE's
# compressed ELF for crash and gdb (vmlinux-X.gz).
_IMAGE_NAME = lazy_compile(r"^(?:vmlinu[xz]-|Image-)(?P<release>.+?)(?:\.efi\.signed|\.gz|\.xz|\.zst)?$"
                           r"|^kernel-(?:genkernel-[A-Za-z0-9_]+-)?(?P<numbered>[0-9].*)$")
# clr-boot-manager (Clear Linux, Solus) copies each kernel to the ESP as kernel-NAMESPACE.TYPE.VERSION-RELEASE
# ("kernel-org.clearlinux.native.5.3.8-854", "kernel-com.solus-project.current.4.14.8-41") and the kernel's modules live in
# VERSION-RELEASE.TYPE (/usr/lib/modules/5.3.8-854.native, what uname -r says): the release is the latter.
_CBM_IMAGE_NAME = lazy_compile(r"^kernel-[a-z][\w-]*(?:\.[\w-]+)*\.(?P<type>[A-Za-z][\w-]*)\.(?P<version>[0-9]+(?:\.[0-9]+)+-[0-9]+)$")
# Version words that come before the release they belong to: 6.5.0-rc5 is older than 6.5.0.
_PRE_RELEASE = ("rc", "pre", "alpha", "beta")
_TOKEN = lazy_compile(r"\d+|[A-Za-z]+")
# The systemd-boot vendor GUID under which it keeps its EFI variables.
_LOADER_GUID = "4a67b082-0a4c-41cf-b6c7-440b29bb8c4f"
GPUDIRECT_MODULES = ("nvidia_peermem", "nv_peer_mem")
# /proc/modules of a node with thousands of modules is a few hundred kilobytes; grub.cfg less.
_READ_MAX_BYTES = 8 * 1024 * 1024


# ---------------------------------------------------------------------------------------------
# Reading files under a root


def under(root, path):
    """Return ``path`` (absolute, as on the node) inside ``root``."""
    return os.path.join(root, path.lstrip("/"))


def read_text(root, path):
    """Return the text of ``path`` under ``root``, or None when it is missing or unreadable.

    Only a regular file is read, up to a bound (``_files.read_lenient``): a FIFO or device in
    the tree reads as None with a warning instead of blocking the module.
    """
    data = read_lenient(under(root, path), "a kernel, boot or module file", _READ_MAX_BYTES)
    return None if data is None else data.decode("utf-8", "replace")


def read_value(root, path):
    """Return the stripped first line of a one-value file (sysfs, procfs), or None."""
    text = read_text(root, path)
    if text is None:
        return None
    text = text.strip()
    return text or None


def list_dir(root, path):
    """Return the sorted names in a directory under ``root``, or [] when it is missing."""
    try:
        return sorted(text_names(under(root, path), os.listdir(under(root, path))))
    except (IOError, OSError):
        return []


# ---------------------------------------------------------------------------------------------
# Kernels


def kernel_version_key(release):
    """Sort key for kernel releases, oldest first.

    Numbers compare as numbers (``6.1.0-28`` before ``6.1.0-104``); ``rc``/``pre`` words sort
    before the release they lead to (``6.5.0-rc5`` before ``6.5.0``); a release with more parts
    is newer than its prefix (``6.1.0`` before ``6.1.0-1``).
    """
    key = []
    for token in _TOKEN.findall(str(release)):
        if token.isascii() and token.isdigit():
            # By length, then digits: the number's order without int(), which raises on a run of over 4300 digits
            # (Python's limit on converting text to int) that a damaged or hostile boot entry's version may hold.
            digits = token.lstrip("0")
            key.append((2, len(digits), digits))
        elif token.lower().startswith(_PRE_RELEASE):
            key.append((0, 0, token.lower()))
        else:
            key.append((1, 0, token.lower()))
    key.append((1, 0, ""))
    return key


def sort_kernels(releases):
    """Return releases sorted oldest first, without duplicates."""
    return sorted(set(releases), key=lambda release: (kernel_version_key(release), release))


def running_kernel(root):
    """The running kernel release: ``proc/sys/kernel/osrelease`` under root (what uname -r says)."""
    release = read_value(root, "/proc/sys/kernel/osrelease")
    if release is None and os.path.realpath(root) == "/":
        release = os.uname()[2]
    return release


def _module_dirs(root):
    """Kernel module directories by release, from lib/modules and usr/lib/modules. A release starts with a
    digit: RHEL's kABI lists (kabi-current, kabi-rhel86) and the like beside them are no kernel's."""
    found = {}
    for base in ("/lib/modules", "/usr/lib/modules"):
        for name in list_dir(root, base):
            path = under(root, base + "/" + name)
            if name[:1].isdigit() and os.path.isdir(path):
                found.setdefault(name, path)
    return found


# The x86 boot protocol's setup header: "HdrS" at 0x202, and at 0x20E where (after 0x200) the
# kernel's version string starts: "5.9.11-3-MANJARO (builduser@...) #1 SMP ...".
_SETUP_MAGIC_AT, _VERSION_POINTER_AT, _IMAGE_HEAD_BYTES = 0x202, 0x20E, 65536
_RELEASE = lazy_compile(rb"^([0-9]+\.[0-9]+[0-9A-Za-z._+~-]*)[ \x00]")


def image_release(root, path):
    """The release an x86 kernel image says it is, from its setup header, or None (another
    architecture's image, not an image, not readable). Arch and Manjaro name their images by package
    (``vmlinuz-linux``, ``vmlinuz-5.9-x86_64``), not by the release their modules are under."""
    try:
        # O_NONBLOCK: a FIFO planted in /boot must not hold the open; only a regular file is read.
        fd = os.open(under(root, path), os.O_RDONLY | os.O_NONBLOCK)
    except (OSError, ValueError):
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        head = os.read(fd, _IMAGE_HEAD_BYTES)
    except OSError:
        return None
    finally:
        os.close(fd)
    if head[_SETUP_MAGIC_AT:_SETUP_MAGIC_AT + 4] != b"HdrS" or len(head) < _VERSION_POINTER_AT + 2:
        return None
    start = int.from_bytes(head[_VERSION_POINTER_AT:_VERSION_POINTER_AT + 2], "little") + 0x200
    match = _RELEASE.match(head[start:start + 256])
    return match.group(1).decode("ascii") if match else None


def _boot_images(root, module_dirs):
    """Kernel releases with an image in /boot (the image's own release where its name is not one)."""
    releases = set()
    for name in list_dir(root, "/boot"):
        release = _image_name_release(name)
        # vmlinuz-0-rescue-MACHINEID (RHEL) and *.old copies are no kernel release of their own.
        if release is None or "rescue" in release or release.endswith((".old", ".bak")):
            continue
        if release not in module_dirs:
            release = image_release(root, "/boot/" + name) or release
        releases.add(release)
    return releases


def _image_name_release(name):
    """The release a kernel image's file name gives (``vmlinuz-6.1.0-28-amd64``, Gentoo's ``kernel-6.6.13-gentoo`` and
    ``kernel-genkernel-x86_64-4.0.5-gentoo``, clr-boot-manager's ``kernel-org.clearlinux.native.5.3.8-854`` as
    ``5.3.8-854.native``), or None."""
    match = _IMAGE_NAME.match(name)
    if match:
        return match.group("release") or match.group("numbered")
    cbm = _CBM_IMAGE_NAME.match(name)
    return "%s.%s" % (cbm.group("version"), cbm.group("type")) if cbm else None


def installed_kernels(root):
    """Return ``(installed, other_dirs)``: kernels that can boot, and module dirs that cannot.

    A kernel counts as installed when the kernel itself is there: a ``kernel/`` module tree in
    ``lib/modules/VERSION`` (every distribution's kernel package ships one), a ``vmlinuz`` beside
    it (Fedora, Arch) or ``boot/vmlinuz-VERSION``. A module directory holding only ``build`` and
    ``source`` links (headers without the kernel) or left-overs such as ``updates/dkms`` after its
    kernel package was removed does not boot, so it is returned in ``other_dirs``.
    """
    module_dirs = _module_dirs(root)
    images = _boot_images(root, module_dirs)
    installed = set(images)
    other = []
    for release, path in module_dirs.items():
        if (
            release in images
            or os.path.isdir(os.path.join(path, "kernel"))
            or os.path.isfile(os.path.join(path, "vmlinuz"))
        ):
            installed.add(release)
        else:
            other.append(release)
    return sort_kernels(installed), sort_kernels(other)


# A release's build: its leading numbers ("4.18.0-372.32.1" of 4.18.0-372.32.1.rt7.189.el8_6.x86_64 and of
# 4.18.0-372.32.1.el8_6.x86_64, "6.1.0-28" of 6.1.0-28-amd64 and 6.1.0-28-cloud-amd64).
_BUILD = lazy_compile(r"^[0-9]+(?:[.-][0-9]+)*")


def _other_flavour(release, running):
    """Whether ``release`` is the running kernel's build in another flavour (realtime, +debug, -64k, -cloud-amd64,
    -lowlatency): installed beside it, not an update of it. A pre-release (rc) is never the same build."""
    build, running_build = _BUILD.match(release), _BUILD.match(running)
    words = [token.lower() for token in _TOKEN.findall(release + " " + running) if not token.isdigit()]
    return (build is not None and running_build is not None and build.group(0) == running_build.group(0)
            and not any(word.startswith(_PRE_RELEASE) for word in words))


def newer_kernels(installed, running):
    """The installed kernels newer than the running one, oldest first; the running build's other flavours
    (4.18.0-372.32.1.rt7.189.el8_6 beside 4.18.0-372.32.1.el8_6, X+debug beside X) are not newer."""
    if running is None:
        return []
    running_key = kernel_version_key(running)
    return [release for release in installed
            if kernel_version_key(release) > running_key and not _other_flavour(release, running)]


def kernel_from_image_path(path):
    """Kernel release from a boot entry's kernel path.

    ``/vmlinuz-6.1.0-28-amd64`` and ``/boot/vmlinuz-...`` name it; the kernel-install layout
    ``/MACHINE-ID/6.8.9-300.fc40.x86_64/linux`` names it in the directory.
    """
    if not path:
        return None
    path = path.strip()
    if ")" in path and path.startswith("("):
        path = path.split(")", 1)[1]
    base = path.rstrip("/").rsplit("/", 1)[-1]
    release = _image_name_release(base)
    if release:
        return release
    if base in ("linux", "vmlinuz") and path.count("/") >= 2:
        directory = path.rstrip("/").rsplit("/", 2)[-2]
        # /boot/vmlinuz is the distribution's link to the newest image, not kernel-install's RELEASE/linux.
        return directory if directory[:1].isdigit() else None
    return None


# ---------------------------------------------------------------------------------------------
# GRUB


def parse_grubenv(text):
    """Return the ``key=value`` pairs of a grubenv block (the ``#`` padding is ignored)."""
    values = {}
    for line in (text or "").splitlines():
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, value = line.split("=", 1)
        values[key.strip()] = value
    return values


def parse_shell_assignments(text):
    """Return ``KEY=value`` assignments of a shell fragment such as /etc/default/grub.

    Quotes are removed the way the shell removes them; later assignments win. Lines that are not
    simple assignments (tests, ``export``, commands) are ignored.
    """
    values = {}
    for line in (text or "").splitlines():
        line = line.strip()
        if line.startswith("export "):
            line = line[len("export "):].strip()
        match = re.match(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$", line)
        if not match:
            continue
        try:
            words = shlex.split(match.group(2), comments=True)
        except ValueError:
            continue
        values[match.group(1)] = " ".join(words)
    return values


def _grub_words(line):
    try:
        return shlex.split(line, comments=True)
    except ValueError:
        return line.split()


def _entry_identity(words):
    """Title and id of a ``menuentry``/``submenu`` line's words."""
    title = words[1] if len(words) > 1 else None
    entry_id = None
    for index, word in enumerate(words[2:], start=2):
        if word in ("$menuentry_id_option", "--id") and index + 1 < len(words):
            entry_id = words[index + 1]
        elif word.startswith("--id="):
            entry_id = word[len("--id="):]
    return title, entry_id


# A variable in a GRUB word: "${boot_counter}", "$prefix".
_GRUB_VARIABLE = lazy_compile(r"\$\{(\w+)\}|\$(\w+)")


def _grub_test(words, env):
    """True, False or None (cannot tell) for the ``[ ... ]`` test of an ``if``/``elif`` line's words, with the
    variables of grubenv: ``-n``/``-z``, ``=``/``==``/``!=``, a bare word, joined by ``-a`` and ``-o``."""
    if len(words) < 2 or words[1] != "[":
        return None  # "if keystatus --shift", "if loadfont ...": not a test of variables
    tokens = []
    for word in words[2:]:
        if word.rstrip(";") == "]":
            break
        tokens.append(_GRUB_VARIABLE.sub(lambda match: env.get(match.group(1) or match.group(2), ""), word))
    else:
        return None

    def term(parts):
        if len(parts) == 2 and parts[0] in ("-n", "-z"):
            return (parts[1] != "") == (parts[0] == "-n")
        if len(parts) == 3 and parts[1] in ("=", "==", "!="):
            return (parts[0] == parts[2]) == (parts[1] != "!=")
        if len(parts) == 1 and not parts[0].startswith("-"):
            return parts[0] != ""
        return None  # "-f file", "-s file": not known from here

    def joined(parts, separator, combine):
        groups, current = [], []
        for part in parts + [separator]:
            if part == separator:
                groups.append(current)
                current = []
            else:
                current.append(part)
        return combine(groups)

    def all_of(groups):
        values = [term(group) for group in groups]
        return False if False in values else (None if None in values else True)

    def any_of(groups):
        values = [joined(group, "-a", all_of) for group in groups]
        return True if True in values else (None if None in values else False)

    return joined(tokens, "-o", any_of)


_GRUB_BRANCH_WORDS = ("if", "elif", "else", "fi")


def _grub_statements(words):
    """The statements of one line's words, split at ";" (a word of its own or ending a word), each without the
    "then" or "do" that opens a branch's body; "else" followed by a command on its line gives both."""
    statements, current = [], []
    for word in words + [";"]:
        end = word.endswith(";")
        word = word[:-1] if end and word != ";" else ("" if word == ";" else word)
        if word:
            current.append(word)
        if end:
            while current and current[0] in ("then", "do"):
                current = current[1:]
            if len(current) > 1 and current[0] == "else":
                statements.append(["else"])
                current = current[1:]
            if current:
                statements.append(current)
            current = []
    return statements


def _grub_branch(frames, words, env):
    """Update the stack of ``if`` frames (each ``[now, some earlier branch taken, some branch unknown]``)."""
    keyword = words[0]
    if keyword == "if":
        value = _grub_test(words, env)
        frames.append([value, value is True, value is None])
    elif keyword in ("elif", "else") and frames:
        frame = frames[-1]
        value = _grub_test(words, env) if keyword == "elif" else True
        if frame[1]:
            value = False
        elif frame[2] and value is not False:
            value = None
        frame[0] = value
        frame[1] = frame[1] or value is True
        frame[2] = frame[2] or value is None
    elif keyword == "fi" and frames:
        frames.pop()


# The commands that load a Linux kernel, and those that load a hypervisor or a pre-kernel (Xen, tboot) whose
# first module is then the kernel (Xen's dom0).
_GRUB_LINUX_COMMANDS = ("linux", "linux16", "linuxefi", "legacy_kernel")
_GRUB_MULTIBOOT_COMMANDS = ("multiboot", "multiboot2")
_GRUB_MODULE_COMMANDS = ("module", "module2")


def _read_entry_statement(entry, words):
    """Take a menu entry's kernel from one of its statements: ``linux PATH ...``, or the first
    ``module2 PATH ...`` after ``multiboot2 /boot/xen.gz`` (its options, ``--nounzip``, skipped)."""
    if entry["kernel"] is not None or len(words) < 2:
        return
    if words[0] in _GRUB_MULTIBOOT_COMMANDS:
        entry["hypervisor"] = words[1]
    elif words[0] in _GRUB_LINUX_COMMANDS or (words[0] in _GRUB_MODULE_COMMANDS and entry.get("hypervisor")):
        # Options come before the path: legacy_kernel's "--type=linux" (a menu.lst converted by grub-menulst2cfg),
        # module2's "--nounzip".
        paths = [word for word in words[1:] if not word.startswith("--")]
        if paths:
            entry["kernel"], entry["image"] = kernel_from_image_path(paths[0]), paths[0]


def parse_grub_cfg(text, env=None):
    """Return ``(menu, defaults, uses_bls)`` for a grub.cfg.

    ``menu`` is the top level as a list of dicts ``{"type": "menuentry"|"submenu", "title", "id",
    "kernel", "image", "hypervisor", "children"}`` (``hypervisor``: the image of Xen or tboot, whose first
    module is then the kernel); ``defaults`` the values of its ``set default=...`` lines in order;
    ``uses_bls`` tells whether it runs ``blscfg`` (entries from /boot/loader/entries). Given ``env``
    (the variables of grubenv), a ``set default=`` in a branch of an ``if`` whose test is false with
    them is left out, as GRUB skips it: the ``set default=1`` of RHEL's and Fedora's boot counting,
    which only runs while ``boot_counter`` counts down a failed boot.
    """
    top = []
    stack = [("root", top, None)]
    defaults = []
    uses_bls = False
    frames = []  # the if/elif/else branches around the current line
    for raw in (text or "").splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        words = _grub_words(line)
        if not words:
            continue
        branch = words[0].rstrip(";") in _GRUB_BRANCH_WORDS
        if (env is not None and branch) or (words[0] == "set" and len(words) > 2 and words[1].endswith(";")):
            # One line may hold a whole if ... fi ("if [ x$grub_platform = xxen ]; then insmod xzio; fi", in every
            # Debian menu entry), close two ("fi; fi") or set the default before one (grub-menulst2cfg's
            # "set default='0'; if [ x"$default" = xsaved ]; then ... fi"): each statement of it counts.
            for statement in _grub_statements(words):
                if statement[0] in _GRUB_BRANCH_WORDS:
                    if env is not None:  # without grubenv no branch is judged
                        _grub_branch(frames, statement, env)
                elif statement[0] == "set" and len(statement) > 1 and statement[1].startswith("default="):
                    if not any(frame[0] is False for frame in frames):
                        defaults.append(statement[1][len("default="):])
            continue
        if words[0] in ("menuentry", "submenu") and "{" in words[1:]:
            # "menuentry 'Title' --id x {" opens an entry; "menuentry test { linux /vmlinux }" is one on one line.
            opening = words.index("{", 1)
            title, entry_id = _entry_identity(words[:opening])
            entry = {"type": words[0], "title": title, "id": entry_id, "kernel": None, "image": None,
                     "hypervisor": None, "children": []}
            stack[-1][1].append(entry)
            stack.append((words[0], entry["children"], entry))
            body = words[opening + 1:]
            if body and body[-1] == "}":
                for statement in _grub_statements(body[:-1]):
                    _read_entry_statement(entry, statement)
                stack.pop()
            continue
        if line.endswith("{"):
            stack.append(("block", [], None))
            continue
        if line == "}":
            if len(stack) > 1:
                stack.pop()
            continue
        kind, _items, entry = stack[-1]
        if kind == "menuentry":
            _read_entry_statement(entry, words)
        elif words[0] == "blscfg":
            # blscfg expands into the BLS entries where it stands, in the current menu.
            uses_bls = True
            stack[-1][1].append({"type": "blscfg", "title": None, "id": None, "kernel": None, "children": []})
        elif words[0] == "set" and len(words) > 1 and words[1].startswith("default="):
            if not any(frame[0] is False for frame in frames):
                defaults.append(words[1][len("default="):])
    return top, defaults, uses_bls


def parse_bls_entry(text):
    """Return the keys of a Boot Loader Specification entry (``key value`` lines)."""
    values = {}
    for line in (text or "").splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        parts = line.split(None, 1)
        values.setdefault(parts[0], parts[1].strip() if len(parts) > 1 else "")
    return values


# The release in a version written as a sentence: "..., Linux Kernel 5.15.78, ..." or "(Linux 6.1.69)".
_LINUX_IN_SENTENCE = lazy_compile(r"\bLinux(?: [Kk]ernel)? (?P<release>[0-9][\w.+~-]*[\w+~])")
# sdbootutil (openSUSE Tumbleweed, MicroOS, Leap 16) writes the btrfs snapshot before the release: "version 1@6.18.4-5-default",
# one entry per snapshot and kernel; the release is what follows the "@".
_SNAPSHOT_AT_RELEASE = lazy_compile(r"^[0-9]+@(?P<release>[0-9][\w.+~-]*)$")
# Boot counting (Boot Loader Specification, kernel-install's /etc/kernel/tries, sdbootutil): "ID+LEFT[-DONE].conf" or
# ".efi". The counter is no part of the entry's id (bootctl's "id" and LoaderEntryDefault name the file without it),
# and an entry with no tries left (LEFT 0) has failed to boot: systemd-boot sorts it after all the others.
_BOOT_COUNTER = lazy_compile(r"^(?P<id>.+)\+(?P<left>[0-9]+)(?:-(?P<done>[0-9]+))?$")


def split_boot_counter(name):
    """Return ``(id, tries_left)`` of a boot entry's file name without its ``.conf``/``.efi`` (``tries_left`` None
    without boot counting): ``opensuse-microos-6.15.8-1-default-4+3`` gives ``("opensuse-microos-6.15.8-1-default-4", 3)``."""
    match = _BOOT_COUNTER.match(name)
    if match is None:
        return name, None
    return match.group("id"), int(match.group("left"))


def _bls_version_release(version, image):
    """The kernel release of a BLS entry's ``version`` and ``linux`` image path, or None where neither names one."""
    # OSTree writes its deployment's serial as the version ("version 1"): no release, which the image names.
    # NixOS a sentence: "Generation 131 NixOS 22.05.4120.16f4e04658c, Linux Kernel 5.15.78, Built on 2022-11-16".
    if version and " " in version.strip():
        sentence = _LINUX_IN_SENTENCE.search(version)
        return sentence.group("release") if sentence else kernel_from_image_path(image)
    snapshot = _SNAPSHOT_AT_RELEASE.match(version or "")
    if snapshot:
        return snapshot.group("release")
    if version and "." in version:
        return version
    # A word ("rescue", "rolling") is a label, not a release: it is not taken for one where the image names none.
    return kernel_from_image_path(image) or (version if version and version[:1].isdigit() else None)


def _bls_order(entry):
    """Sort key of BLS entries, first to boot first: newest version first (as blscfg and sd-boot order), then the
    file name, and an entry with no boot tries left after every other one, as systemd-boot puts it.

    An entry whose version is a bare serial (OSTree's deployment serial) is ordered by that serial, not by its
    image's release: blscfg compares the ``version`` key as written, and OSTree gives the default deployment
    ("(ostree:0)") the highest serial, so it is the first entry even where a rollback deployment has a newer kernel.
    """
    serial = entry.get("serial")
    version = serial if serial is not None else entry["kernel"] or ""
    return (entry.get("tries_left") != 0, kernel_version_key(version), kernel_version_key(entry["id"]))


def read_bls_entries(root, directory):
    """BLS entries of ``directory`` under root, in the order they boot (see ``_bls_order``).

    Each is ``{"type": "menuentry", "id": file name without .conf and its boot counter, "title", "kernel", "image",
    "tries_left", "serial"}`` (``tries_left``: None without boot counting; ``serial``: the version where it is a bare
    whole number, as OSTree's deployment serial, else None).
    """
    entries = []
    for name in list_dir(root, directory):
        if not name.endswith(".conf"):
            continue
        values = parse_bls_entry(read_text(root, directory + "/" + name))
        entry_id, tries_left = split_boot_counter(name[:-len(".conf")])
        version = values.get("version") or ""
        entries.append({
            "type": "menuentry",
            "id": entry_id,
            "title": values.get("title") or entry_id,
            "kernel": _bls_version_release(values.get("version"), values.get("linux")),
            "image": values.get("linux") or None,
            "tries_left": tries_left,
            "serial": version if _is_decimal(version) else None,
            "children": [],
        })
    entries.sort(key=_bls_order, reverse=True)
    return entries


def _expand_bls(menu, bls_entries):
    expanded = []
    for entry in menu:
        if entry["type"] == "blscfg":
            expanded.extend(bls_entries)
        else:
            if entry["children"]:
                entry = dict(entry, children=_expand_bls(entry["children"], bls_entries))
            expanded.append(entry)
    return expanded


def _find_in(level, part):
    if _is_decimal(part) and len(part) < 10:
        index = int(part)
        return level[index] if index < len(level) else None
    for entry in level:
        if part in (entry["id"], entry["title"]):
            return entry
    return None


def resolve_grub_entry(menu, selector):
    """Return the menu entry GRUB boots for a ``default`` value, or None when nothing matches.

    ``selector`` is an index (``0``), a title or id, or a path through submenus (``1>2``,
    ``gnulinux-advanced-UUID>gnulinux-6.1.0-28-amd64-advanced-UUID``). A submenu chosen as a
    whole boots its first entry.
    """
    level = menu
    entry = None
    for part in str(selector).split(">"):
        entry = _find_in(level, part.strip())
        if entry is None:
            return None
        level = entry["children"]
    while entry is not None and entry["type"] == "submenu":
        entry = entry["children"][0] if entry["children"] else None
    return entry


def _kernel_named_in(selector):
    """A kernel release spelt inside a title or id (``with Linux 6.1.0-28-amd64``); of a submenu's path
    (``gnulinux-advanced-UUID>gnulinux-6.1.0-28-amd64-advanced-UUID``), its entry's."""
    entry = (selector or "").rsplit(">", 1)[-1]
    for pattern in (r"with Linux (\S+)", r"gnulinux-(\S+?)-(?:advanced|recovery)-", r"vmlinuz-(\S+)"):
        match = re.search(pattern, entry)
        if match:
            return match.group(1)
    return None


_GRUB_DIRS = ("/boot/grub", "/boot/grub2")
# Where GRUB on UEFI keeps its grub.cfg and grubenv beside its binary when /boot/grub2 has none (RHEL, Rocky,
# Alma and Oracle Linux 8, CentOS 7: /boot/efi/EFI/redhat/grub.cfg); later releases put a stub there that loads
# /boot/grub2/grub.cfg, which is read first.
_EFI_DIR = "/boot/efi/EFI"


def _grub_dirs(root):
    return _GRUB_DIRS + tuple("%s/%s" % (_EFI_DIR, vendor) for vendor in list_dir(root, _EFI_DIR) if vendor.upper() != "BOOT")


def _grub_selector(cfg_defaults, env, etc_default):
    """Return ``(selector, source)``: the ``default`` GRUB evaluates at the next boot.

    ``next_entry`` (set by grub-reboot) wins once. Otherwise grub.cfg's own ``set default=`` line
    rules, as GRUB reads grub.cfg, not /etc/default/grub; ``${saved_entry}`` takes the value from
    grubenv (grub-set-default), and an empty saved_entry means the first entry.
    """
    if env.get("next_entry"):
        return env["next_entry"], "grub_next_entry"
    literal = [value for value in cfg_defaults if value != "${next_entry}"]
    if literal:
        configured = literal[-1]
    else:
        grub_default = etc_default.get("GRUB_DEFAULT", "0")
        configured = "${saved_entry}" if grub_default == "saved" else grub_default
    if configured == "${saved_entry}":
        if env.get("saved_entry"):
            return env["saved_entry"], "grub_saved_entry"
        return "0", "grub_default"
    return configured, "grub_default"


# grub-mkconfig's 41_custom ends grub.cfg with "source ${config_directory}/custom.cfg" (or "$prefix/custom.cfg"): GRUB
# runs custom.cfg beside grub.cfg at every boot, after the menu, so that it can change the default without update-grub.
# GRUB 1.98 to 2.00 wrote the line with a semicolon after it ("source $prefix/custom.cfg;"), which ends the command.
_SOURCES_CUSTOM_CFG = lazy_compile(r"^\s*source\s+\S*/custom\.cfg\s*;?\s*$", re.MULTILINE)


def _grub_script_defaults(text):
    """Yield ``(line_number, value, conditional)`` for each ``set default=`` of a GRUB script, in order; ``conditional``
    when it runs only under an ``if`` or inside a block (a menu entry's body, a function), which is not judged here."""
    ifs = blocks = 0
    for number, raw in enumerate((text or "").splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        for statement in _grub_statements(_grub_words(line)):
            if statement[0] == "if":
                ifs += 1
            elif statement[0] == "fi":
                ifs = max(0, ifs - 1)
            elif statement[0] == "set" and len(statement) > 1 and statement[1].startswith("default="):
                yield number, statement[1][len("default="):], bool(ifs or blocks)
        if line.endswith("{"):
            blocks += 1
        elif line.startswith("}"):
            blocks = max(0, blocks - 1)


def _custom_cfg_selector(root, cfg_path, cfg_text, env, selector, source, notes):
    """Return ``(selector, source, custom_path, custom_text)`` after custom.cfg where grub.cfg sources it: its last
    unconditional ``set default=`` wins (the source ``grub_custom_cfg``); a conditional one after it, or one from a
    variable, makes the selector None, with a note, since its test (a disk found by ``search``, a key pressed) is made
    at boot."""
    custom_path = cfg_path.rsplit("/", 1)[0] + "/custom.cfg"
    custom_text = read_text(root, custom_path) if _SOURCES_CUSTOM_CFG.search(cfg_text) else None
    unknown = None
    for number, value, conditional in _grub_script_defaults(custom_text):
        if value == "${saved_entry}":
            value = env.get("saved_entry") or "0"
        if conditional or "$" in value:
            unknown = "%s line %d sets default=%s %s: the next kernel is not known" % (
                custom_path, number, value, "under a condition GRUB tests at boot" if conditional else "from a variable GRUB sets at boot")
        else:
            selector, source, unknown = value, "grub_custom_cfg", None
    if unknown is not None:
        notes.append(unknown)
        return None, None, custom_path, custom_text
    return selector, source, custom_path, custom_text


# "load_env -f FILE": Azure Linux (CBL-Mariner) and Photon OS name the kernel in a file of NAME=VALUE lines that grub.cfg
# loads ("load_env -f $bootprefix/mariner.cfg" gives "mariner_linux=vmlinuz-5.15.158.2-1.cm2"), and their menu entry
# boots "linux $bootprefix/$mariner_linux".
_GRUB_SET = lazy_compile(r"^(?P<name>\w+)=(?P<value>.*)$")


def _expand_grub_word(word, variables):
    """``word`` with its variables replaced, or None where one of them is not known."""
    names = [match.group(1) or match.group(2) for match in _GRUB_VARIABLE.finditer(word)]
    if any(variables.get(name) is None for name in names):
        return None
    return _GRUB_VARIABLE.sub(lambda match: variables[match.group(1) or match.group(2)], word)


def _grub_variables(root, text, partitions=("", "/boot")):
    """The variables grub.cfg sets outside its menu entries: ``set NAME=VALUE`` and the lines of each file ``load_env -f
    FILE`` reads (on GRUB's partition, mounted at one of ``partitions``). A value set under an ``if`` is None (not
    known), except a file's, loaded under ``if [ -f FILE ]``: that test is the file's presence, which reading it tells."""
    variables = {}
    frames = []  # per enclosing if: the file its "[ -f FILE ]" test names, or None for another test or branch
    blocks = 0
    for raw in (text or "").splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        words = _grub_words(line)
        if words and words[0] in ("menuentry", "submenu", "function") or (line.endswith("{") and blocks):
            blocks += line.endswith("{")
            continue
        if blocks:
            blocks -= line.startswith("}")
            continue
        for statement in _grub_statements(words):
            keyword = statement[0]
            if keyword == "if":
                test = [word for word in statement[1:] if word not in ("[", "]")]
                frames.append(test[1] if len(test) == 2 and test[0] == "-f" else None)
            elif keyword in ("elif", "else") and frames:
                frames[-1] = None
            elif keyword == "fi" and frames:
                frames.pop()
            elif keyword == "set" and len(statement) > 1 and _GRUB_SET.match(statement[1]):
                match = _GRUB_SET.match(statement[1])
                variables[match.group("name")] = None if frames else _expand_grub_word(match.group("value"), variables)
            elif keyword == "load_env" and "-f" in statement[:-1]:
                named = statement[statement.index("-f") + 1]
                path = _expand_grub_word(named, variables)
                loaded = None
                for partition in partitions if path else ():
                    loaded = read_text(root, partition + path)
                    if loaded is not None:
                        break
                known = all(frame == named for frame in frames)
                for name, value in parse_grubenv(loaded).items():
                    variables[name] = value if known else None
    return variables


def grub_next_boot(root, notes):
    """Return ``(kernel, source, entry)`` from GRUB's configuration, or None without GRUB."""
    cfg_path = cfg_text = None
    directories = _grub_dirs(root)
    for directory in directories:
        cfg_text = read_text(root, directory + "/grub.cfg")
        if cfg_text is not None:
            cfg_path = directory + "/grub.cfg"
            break
    env = {}
    for directory in directories:
        env_text = read_text(root, directory + "/grubenv")
        if env_text is not None:
            env = parse_grubenv(env_text)
            break
    etc_default = parse_shell_assignments(read_text(root, "/etc/default/grub"))
    if cfg_text is None and not env and "GRUB_DEFAULT" not in etc_default:
        return None

    menu, cfg_defaults, uses_bls = parse_grub_cfg(cfg_text, env) if cfg_text is not None else ([], [], False)
    selector, source = _grub_selector(cfg_defaults, env, etc_default)

    literal = [value for value in cfg_defaults if value != "${next_entry}"]
    etc_value = etc_default.get("GRUB_DEFAULT")
    if literal and etc_value is not None:
        etc_configured = "${saved_entry}" if etc_value == "saved" else etc_value
        if etc_configured != literal[-1]:
            notes.append(
                "GRUB_DEFAULT=%s in /etc/default/grub differs from default=%s in %s: GRUB follows %s "
                "until update-grub (grub2-mkconfig) runs" % (etc_value, literal[-1], cfg_path, cfg_path)
            )

    if cfg_text is None:
        kernel = _kernel_named_in(selector)
        if kernel is None:
            notes.append("GRUB default %r cannot be resolved without grub.cfg" % selector)
            return None, None, selector
        return kernel, source, selector

    selector, source, custom_path, custom_text = _custom_cfg_selector(root, cfg_path, cfg_text, env, selector, source, notes)
    if selector is None:
        return None, None, None
    if custom_text is not None:
        # custom.cfg's own entries follow grub.cfg's in the menu.
        menu = menu + parse_grub_cfg(custom_text, env)[0]
    if uses_bls:
        menu = _expand_bls(menu, read_bls_entries(root, "/boot/loader/entries"))
    entry = resolve_grub_entry(menu, selector)
    if entry is None:
        notes.append(
            "GRUB default %r names no entry of %s; GRUB falls back to the first entry" % (selector, cfg_path)
        )
        entry = resolve_grub_entry(menu, "0")
        source = "grub_first_entry"
    if entry is None:
        notes.append("%s has no menu entries" % cfg_path)
        return None, None, selector
    name = entry["title"] or entry["id"]
    if entry["kernel"] is None and "$" in (entry.get("image") or ""):
        image = _expand_grub_word(entry["image"], _grub_variables(root, cfg_text))
        if image is None:
            notes.append("GRUB boots %r next, whose kernel %s is a variable that neither grub.cfg nor a file it loads "
                         "(load_env -f) sets: the next kernel is not known" % (name, entry["image"]))
            return None, None, name
        entry = dict(entry, image=image, kernel=kernel_from_image_path(image))
    release = _entry_release(root, entry)
    if release is None:
        notes.append("GRUB boots %r next, which names no Linux kernel" % name)
        return None, None, name
    return release, source, name


def _entry_release(root, entry, partitions=("", "/boot")):
    """An entry's kernel release; where its image's name is no module directory (``/vmlinuz-linux``), the image's
    own. The boot loader names the image on the partition it reads, mounted at one of ``partitions``: GRUB's / of a
    separate /boot is /boot here, systemd-boot's / is the ESP."""
    image = entry.get("image")
    if not image or entry["kernel"] in _module_dirs(root):
        return entry["kernel"]
    path = image.split(")", 1)[1] if image.startswith("(") and ")" in image else image
    for partition in partitions:
        # /vmlinuz and /boot/vmlinuz: the distribution's link names the image it points to.
        release = (entry["kernel"] is None and _link_release(root, partition + path)) or image_release(root, partition + path)
        if release:
            return release
    return entry["kernel"]


def _link_release(root, path):
    """The release a symbolic link's target names (``/vmlinuz -> boot/vmlinuz-6.1.0-28-amd64``), or None."""
    try:
        return kernel_from_image_path(os.readlink(under(root, path)))
    except (OSError, ValueError):
        return None


# ---------------------------------------------------------------------------------------------
# systemd-boot


def _efi_string(root, name):
    """An EFI variable of systemd-boot as text (4 attribute bytes, then UTF-16LE with a NUL)."""
    path = under(root, "/sys/firmware/efi/efivars/%s-%s" % (name, _LOADER_GUID))
    data = read_lenient(path, "an EFI variable", _READ_MAX_BYTES)
    if data is None:
        return None
    value = data[4:].decode("utf-16-le", "replace").split("\x00", 1)[0].strip()
    return value or None


def _entry_matches(entry, pattern):
    return fnmatch.fnmatchcase(entry["id"], pattern) or fnmatch.fnmatchcase(entry["id"] + ".conf", pattern)


# Where the ESP is mounted; its loader/loader.conf says systemd-boot is the boot loader.
_ESP_MOUNTS = ("/boot", "/boot/efi", "/efi")
# The Extended Boot Loader partition ($BOOT): where the ESP is mounted elsewhere (/efi, /boot/efi), kernel-install,
# bootctl and archinstall put the entries and kernels in /boot, and systemd-boot reads the entries of both partitions.
_XBOOTLDR = "/boot"
# Type #2 entries: unified kernel images (kernel, initrd and command line in one EFI binary, their release inside its
# .osrel and .uname sections), listed by systemd-boot beside the Type #1 entries of loader/entries.
_UNIFIED_KERNEL_IMAGES = "/EFI/Linux"


def _unified_kernel_images(root, partitions):
    """The ids (file names, boot counter left out) of the Type #2 entries in the partitions' EFI/Linux."""
    found = []
    for partition in partitions:
        for name in list_dir(root, partition + _UNIFIED_KERNEL_IMAGES):
            if name.lower().endswith(".efi"):
                found.append(split_boot_counter(name[:-len(".efi")])[0] + name[-len(".efi"):])
    return found


def systemd_boot_next_boot(root, notes):
    """Return ``(kernel, source, entry)`` from systemd-boot's loader.conf and entries, or None.

    The entries are the ESP's and, where the ESP is not /boot, those of the XBOOTLDR partition at /boot, in one
    order. Where unified kernel images (Type #2 entries, ``EFI/Linux/*.efi``) are there too, the kernel is not known
    (None, with a note) unless the default names Type #1 entries only: their release and place in the order are
    inside the image, which is not read here.
    """
    for esp in _ESP_MOUNTS:
        conf_text = read_text(root, esp + "/loader/loader.conf")
        if conf_text is None:
            continue
        partitions = (esp,) if esp == _XBOOTLDR else (esp, _XBOOTLDR)
        entries, partition_of = [], {}
        for partition in partitions:
            for entry in read_bls_entries(root, partition + "/loader/entries"):
                entries.append(entry)
                partition_of[entry["id"]] = partition_of.get(entry["id"], partition)
        entries.sort(key=_bls_order, reverse=True)
        images = _unified_kernel_images(root, partitions)
        if not entries and not images:
            places = [partition + "/loader/entries" for partition in partitions]
            notes.append("%s/loader/loader.conf exists but %s" % (
                esp, places[0] + " has no entries" if len(places) == 1 else "neither %s nor %s has entries" % tuple(places)))
            return None, None, None
        pattern = _efi_string(root, "LoaderEntryOneShot")
        source = "systemd_boot_oneshot"
        if pattern is None:
            pattern, source = _efi_string(root, "LoaderEntryDefault"), "systemd_boot_efi_default"
        if pattern is None:
            pattern = parse_bls_entry(conf_text).get("default")
            source = "systemd_boot_default"
        if pattern in ("@saved", "@default"):
            notes.append("systemd-boot's default is %s, which lives in EFI variables not readable here" % pattern)
            pattern = None
        matching = [entry for entry in entries if _entry_matches(entry, pattern)] if pattern else []
        if images and (not matching or any(fnmatch.fnmatchcase(image, pattern) or fnmatch.fnmatchcase(image[:-len(".efi")], pattern)
                                           for image in images)):
            notes.append("systemd-boot also boots the unified kernel images in %s (%s), whose kernels and place among "
                         "the entries are not read here: the next kernel is not known" % (
                             " and ".join(partition + _UNIFIED_KERNEL_IMAGES for partition in partitions), ", ".join(images)))
            return None, None, None
        chosen = entries[0]
        if matching:
            chosen = matching[0]
        elif pattern:
            notes.append("systemd-boot default %r matches no entry; it boots the first one" % pattern)
            source = "systemd_boot_first_entry"
        else:
            source = "systemd_boot_first_entry"
        release = _entry_release(root, chosen, (partition_of[chosen["id"]],))
        if release is None:
            notes.append("systemd-boot boots %r next, whose entry names no kernel release" % chosen["id"])
            return None, None, chosen["id"]
        return release, source, chosen["id"]
    return None


def next_boot(root, installed, notes, running=None):
    """Return ``(kernel, source, entry)``: the kernel the node boots next and how that was read.

    GRUB first (``next_entry``, grub.cfg's ``default``, ``saved_entry``, BLS entries), then
    systemd-boot; where no boot loader configuration can be read, the newest installed kernel with
    the source ``newest_installed`` (of its build's flavours, ``running``'s where it is one of them).
    """
    for reader in (grub_next_boot, systemd_boot_next_boot):
        found = reader(root, notes)
        if found is not None and found[0] is not None:
            return found
        if found is not None:
            break
    if installed:
        notes.append("the boot loader does not tell which kernel boots next; assuming the newest installed one")
        return _newest(installed, running), "newest_installed", None
    return None, None, None


def _newest(installed, running):
    """The newest installed kernel; of the newest build's flavours, the running one's where it is among them (a
    distribution's default is its plain kernel, not +debug or the realtime one installed beside it)."""
    newest = installed[-1]
    if running in installed and _other_flavour(newest, running):
        return running
    return newest


# ---------------------------------------------------------------------------------------------
# Loaded modules, OFED, devices


def _is_decimal(text):
    """ASCII digits only: ``"²".isdigit()`` is true but ``int("²")`` raises."""
    return text.isascii() and text.isdigit()


# module_flags() ends the taint letters with "-" while the module is being unloaded and "+" while it is being loaded
# ("(OE-)", or "(-)" for an untainted module): marks of its state, which the state field also says, not taint flags.
_MODULE_STATE_MARKS = "-+"


def parse_proc_modules(text, source="/proc/modules"):
    """Parse /proc/modules into ``{name: {size, refcount, used_by, state, taint}}``.

    Lines look like ``ib_core 462848 8 rdma_ucm,ib_uverbs,mlx5_ib, Live 0x0000000000000000 (OE)``;
    the address and taint flags are optional, ``-`` means none. The kernel's flags among the users
    (``[permanent]``: no exit function; ``[unsafe]`` on old kernels) name no module. A kernel built
    without module unloading prints ``- -`` for the count and the users: both unknown (null), no
    warning. The count is signed, as the kernel prints it (``%i``): -1 while an unload is under way or
    stuck (``lsw 131072 -1 - Unloading 0x0000000000000000 (OE-)``). After the taint letters the kernel
    marks a module being unloaded with ``-`` and one being loaded with ``+``; the mark is the state
    (``Unloading``, ``Loading``), not a taint flag, and is left out of ``taint``. A size that is not an
    unsigned 64-bit number, or a count that is not a signed one, is null, with a warning naming
    ``source`` and the module.
    """
    modules = {}
    for line in (text or "").splitlines():
        fields = line.split()
        if len(fields) < 3:
            continue
        name = fields[0]
        unload_unknown = fields[2] == "-" and len(fields) > 3 and fields[3] == "-"
        used_by = None if unload_unknown else []
        if len(fields) > 3 and fields[3] != "-":
            used_by = [user for user in fields[3].split(",") if user and not user.startswith("[")]
        taint = None
        if fields[-1].startswith("(") and fields[-1].endswith(")"):
            taint = fields[-1][1:-1].rstrip(_MODULE_STATE_MARKS) or None
        modules[name] = {
            "size": parse_uint(fields[1], "%s (%s size)" % (source, name)),
            "refcount": None if unload_unknown else parse_int(fields[2], "%s (%s refcount)" % (source, name)),
            "used_by": used_by,
            "state": fields[4] if len(fields) > 4 and not fields[4].startswith("(") else None,
            "taint": taint,
        }
    return modules


def loaded_modules(root):
    """Loaded modules from /proc/modules, each with ``version``/``srcversion`` from /sys/module."""
    text = read_text(root, "/proc/modules")
    if text is None:
        return None
    modules = parse_proc_modules(text, under(root, "/proc/modules"))
    for name, module in modules.items():
        module["version"] = read_value(root, "/sys/module/%s/version" % name)
        module["srcversion"] = read_value(root, "/sys/module/%s/srcversion" % name)
    return modules


# The distributions ofed_info names: MLNX_OFED_LINUX, MLNX_EN, OFED-internal (DOCA-OFED and the drivers' own builds).
_OFED_DISTRIBUTION = lazy_compile(r"(?:MLNX_OFED|MLNX_EN|OFED)[-_]", re.IGNORECASE)
# A prompt line that runs ofed_info itself ("[root@node ~]# ofed_info -s", "$ sudo /usr/bin/ofed_info"): the command
# comes right after the prompt's character ("# which ofed_info" runs which, not ofed_info).
_OFED_INFO_RUN = lazy_compile(r"(?:[$#%>\]]|\u276f|\u279c|\u2192|\u03bb)\s*(?:sudo\s+)?(?:\S*/)?ofed_info(?:\s|$)")


def _ofed_info_lines(lines):
    """The lines of a paste that ofed_info printed. Where a prompt line runs ofed_info, only the lines after it up to
    the next prompt are its output: in a paste of several commands (``rpm -q rdma-core``, then ``ofed_info -s``) another
    command's output is no OFED release. Without such a prompt every line may be ofed_info's."""
    prompts = {index for index, line in enumerate(lines) if line and is_shell_prompt(line)}
    if not any(_OFED_INFO_RUN.search(lines[index]) for index in prompts):
        return lines
    kept, inside = [], False
    for index, line in enumerate(lines):
        if index in prompts:
            inside = bool(_OFED_INFO_RUN.search(line))
        elif inside:
            kept.append(line)
    return kept


def parse_ofed_info(text):
    """Parse ``ofed_info -s`` output: ``MLNX_OFED_LINUX-23.10-1.1.9.0:`` or ``OFED-internal-24.07-0.6.1:``.

    Returns ``{"id", "distribution", "version"}`` or None for empty text, or for a shell that found no
    ``ofed_info`` (the inbox rdma-core has none). The first line of full ``ofed_info`` output
    (``MLNX_OFED_LINUX-5.8-1.0.1.1 (OFED-5.8-1.0.1):``) works too, and so does ``ofed_info -n``'s bare
    version (no distribution). A shell prompt saved before the output is skipped, and so are lines a
    note put before it (the system's name, ``Output:``) where a later line has ofed_info's form
    (``NAME-VERSION:``, or a bare version); without one, the first line is the unknown answer. In a paste of
    several commands, each after its prompt, only the output of the ``ofed_info`` command counts (its ``command not
    found`` too), not a package name that ``rpm -q`` printed before it.
    """
    unknown = None
    for line in _ofed_info_lines([line.strip() for line in (text or "").splitlines()]):
        if not line or is_shell_prompt(line):
            continue
        if re.search(r"ofed_info: (?:command )?not found|no such file or directory", line, re.IGNORECASE):
            return None
        ident = line.split()[0].rstrip(":")
        match = re.match(r"^(?P<distribution>[A-Za-z][\w.+~-]*?)-(?P<version>\d[\w.+~-]*)$", ident)
        # After a line that is not ofed_info's, only its header form counts (the colon that ends its line) or
        # the name of an OFED distribution (an author's copy may lose the colon), not a package or host name
        # further down a paste.
        if match and (unknown is None or line.endswith(":") or _OFED_DISTRIBUTION.match(ident)):
            return {"id": ident, "distribution": match.group("distribution"), "version": match.group("version")}
        if re.match(r"^\d[\w.+~-]*$", ident) and (unknown is None or line == ident):
            return {"id": ident, "distribution": None, "version": ident}
        unknown = unknown or {"id": ident, "distribution": None, "version": None}
    return unknown


def _natural_key(name):
    return [(0, int(token), "") if token.isascii() and token.isdigit() else (1, 0, token)
            for token in re.findall(r"[0-9]+|[^0-9]+", name)]


def infiniband_devices(root):
    """Names under /dev/infiniband (``uverbs0``, ``rdma_cm``, ``umad0``), in natural order, or None."""
    path = under(root, "/dev/infiniband")
    if not os.path.isdir(path):
        return None
    return sorted(text_names(path, os.listdir(path)), key=_natural_key)


# ---------------------------------------------------------------------------------------------
# Everything together


def dkms_facts(text, version, names, notes):
    """The ``dkms`` fact from ``dkms status`` text: entries, diagnostics and the view of ``names``."""
    status = status_of_node(text)
    entries = [item for item in status["modules"] if item["name"] is not None]
    for line in status["unplaced"]:
        notes.append("dkms status printed a line that is not a status line: %r" % line)
    return {
        "version": version,
        "entries": entries,
        "errors": status["errors"],
        "warnings": status["warnings"],
        "relevant": summarize(entries, names),
    }


def gather(root, dkms_text=None, dkms_version=None, ofed_text=None, dkms_modules=(), notes=None):
    """Return the ``rdma_driver`` facts for the tree at ``root``.

    ``dkms_text`` is the output of ``dkms status`` (None: dkms is not there; the caller says why
    in ``notes``), ``ofed_text`` the output of ``ofed_info -s`` (None: absent).
    """
    notes = list(notes or [])
    running = running_kernel(root)
    if running is None:
        notes.append("proc/sys/kernel/osrelease is missing: running kernel unknown")
    installed, other_dirs = installed_kernels(root)
    if not installed:
        notes.append("no installed kernel found under lib/modules or boot")
    if other_dirs:
        notes.append(
            "module directories without a kernel image are not counted as installed kernels: %s"
            % ", ".join(other_dirs)
        )
    if running is not None and installed and running not in installed:
        notes.append("the running kernel %s is no longer installed (its package was removed)" % running)
    boot_kernel, boot_source, boot_entry = next_boot(root, installed, notes, running)
    if boot_kernel is not None and installed and boot_kernel not in installed:
        notes.append("the boot loader's next kernel %s is not an installed kernel" % boot_kernel)

    modules = loaded_modules(root)
    if modules is None:
        notes.append("proc/modules is missing: loaded modules unknown")
        modules = {}
    gpudirect = next((name for name in GPUDIRECT_MODULES if name in modules), None)

    devices = infiniband_devices(root)
    if devices is None:
        notes.append("dev/infiniband is missing: no RDMA device nodes")
        devices = []

    ofed = parse_ofed_info(ofed_text)
    dkms = None if dkms_text is None else dkms_facts(dkms_text, dkms_version, list(dkms_modules), notes)

    return {
        "running_kernel": running,
        "installed_kernels": installed,
        "newer_kernels": newer_kernels(installed, running),
        "other_module_dirs": other_dirs,
        "next_boot_kernel": boot_kernel,
        "next_boot_source": boot_source,
        "next_boot_entry": boot_entry,
        "loaded_modules": modules,
        "nvidia_peermem_loaded": "nvidia_peermem" in modules,
        "gpudirect_module": gpudirect,
        "dkms": dkms,
        "ofed_version": ofed["id"] if ofed else None,
        "ofed": ofed,
        "infiniband_devices": devices,
        "notes": notes,
    }
