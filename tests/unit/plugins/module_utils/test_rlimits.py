"""Resource limit names and values: the OCI dialect (runc) and the systemd dialect (Limit*=)."""

from __future__ import annotations

import pytest

from ansible_collections.rdma.node.plugins.module_utils._rlimits import (
    RLIM_INFINITY,
    RLIMIT_TYPES,
    SYSTEMD_DIRECTIVES,
    RlimitError,
    normalize_rlimit_type,
    normalize_rlimits,
    normalize_systemd_directive,
    normalize_systemd_limits,
    parse_rlimit_value,
    parse_systemd_limit,
)


def test_infinity_is_uint64_max():
    # The value the seed writes into the spec and runc passes to setrlimit(2).
    assert RLIM_INFINITY == 2 ** 64 - 1 == 18446744073709551615
    assert len(RLIMIT_TYPES) == 16
    assert SYSTEMD_DIRECTIVES[RLIMIT_TYPES.index("RLIMIT_MEMLOCK")] == "LimitMEMLOCK"


@pytest.mark.parametrize(
    "value, expected",
    [
        (0, 0),
        (4096, 4096),
        ("4096", 4096),
        (" 4096 ", 4096),
        ("+5", 5),
        ("unlimited", RLIM_INFINITY),
        ("Unlimited", RLIM_INFINITY),
        ("infinity", RLIM_INFINITY),
        ("INFINITY", RLIM_INFINITY),
        ("64K", 65536),
        ("64k", 65536),
        ("64 K", 65536),
        ("8M", 8 * 1024 * 1024),
        ("4M", 4194304),
        ("1G", 1073741824),
        ("2T", 2 * 1024 ** 4),
        ("15E", 15 * 1024 ** 6),
        (RLIM_INFINITY, RLIM_INFINITY),
        (str(RLIM_INFINITY), RLIM_INFINITY),
    ],
)
def test_parse_rlimit_value(value, expected):
    assert parse_rlimit_value(value) == expected


@pytest.mark.parametrize(
    "value, message",
    [
        (-1, "soft must not be negative, got -1."),
        ("-1", "soft must not be negative, got '-1'."),
        ("-64K", "soft must not be negative, got '-64K'."),
        (True, "soft must be an integer, 'unlimited' or a number with a K/M/G/T suffix, got True."),
        (None, "soft must be an integer, 'unlimited' or a number with a K/M/G/T suffix, got None."),
        (1.5, "soft must be a whole number, got the fraction 1.5."),
        ("1.5M", "soft must be an integer, 'unlimited' or a number with a K/M/G/T suffix (64K, 8M), got '1.5M'."),
        ("8MiB", "soft must be an integer, 'unlimited' or a number with a K/M/G/T suffix (64K, 8M), got '8MiB'."),
        ("lots", "soft must be an integer, 'unlimited' or a number with a K/M/G/T suffix (64K, 8M), got 'lots'."),
        ("", "soft must be an integer, 'unlimited' or a number with a K/M/G/T suffix (64K, 8M), got ''."),
        ("0x10", "soft must be an integer, 'unlimited' or a number with a K/M/G/T suffix (64K, 8M), got '0x10'."),
        ([1], "soft must be an integer, 'unlimited' or a number with a K/M/G/T suffix, got a list."),
        (RLIM_INFINITY + 1, "soft 18446744073709551616 is larger than 18446744073709551615 (unlimited), "
                            "the largest value an rlimit can hold."),
        ("16E", "soft '16E' is larger than 18446744073709551615 (unlimited), the largest value an rlimit can hold."),
    ],
)
def test_parse_rlimit_value_rejects(value, message):
    with pytest.raises(RlimitError) as error:
        parse_rlimit_value(value, "soft")
    assert str(error.value) == message


@pytest.mark.parametrize(
    "name", ["RLIMIT_MEMLOCK", "rlimit_memlock", "MEMLOCK", "memlock", " Memlock ", "LimitMEMLOCK", "limitmemlock"]
)
def test_normalize_rlimit_type(name):
    assert normalize_rlimit_type(name) == "RLIMIT_MEMLOCK"


@pytest.mark.parametrize("name", ["RLIMIT_FOO", "MEMLOK", "", None, 8])
def test_normalize_rlimit_type_rejects(name):
    with pytest.raises(RlimitError) as error:
        normalize_rlimit_type(name, "rlimits[0].type")
    assert str(error.value).startswith("rlimits[0].type ")
    assert str(error.value).count(".") >= 1 and "\n" not in str(error.value)


def test_unknown_type_message_lists_the_choices():
    with pytest.raises(RlimitError) as error:
        normalize_rlimit_type("RLIMIT_FOO", "rlimits[1].type")
    assert str(error.value) == (
        "rlimits[1].type 'RLIMIT_FOO' is not a Linux resource limit; expected one of " + ", ".join(RLIMIT_TYPES) + "."
    )


def test_normalize_rlimits_fills_the_missing_side_and_defaults_state():
    result = normalize_rlimits(
        [
            {"type": "memlock", "soft": "unlimited", "hard": "unlimited"},
            {"type": "NOFILE", "hard": "1M"},
            {"type": "RLIMIT_CORE", "soft": 0, "state": None},
            {"type": "RLIMIT_NPROC", "state": "absent"},
        ]
    )
    assert result == [
        {"type": "RLIMIT_MEMLOCK", "soft": RLIM_INFINITY, "hard": RLIM_INFINITY, "state": "present"},
        {"type": "RLIMIT_NOFILE", "soft": 1048576, "hard": 1048576, "state": "present"},
        {"type": "RLIMIT_CORE", "soft": 0, "hard": 0, "state": "present"},
        {"type": "RLIMIT_NPROC", "state": "absent"},
    ]


@pytest.mark.parametrize(
    "value, message",
    [
        ({"type": "RLIMIT_MEMLOCK", "soft": 1}, "rlimits must be a list of dicts with type, soft, hard and state, got a dict."),
        ("RLIMIT_MEMLOCK", "rlimits must be a list of dicts with type, soft, hard and state, got a str."),
        (["RLIMIT_MEMLOCK"], "rlimits[0] must be a dict with type, soft, hard and state, got 'RLIMIT_MEMLOCK'."),
        ([{"type": "RLIMIT_MEMLOCK", "soft": 8, "hard": 4}],
         "rlimits[0] (RLIMIT_MEMLOCK) has soft 8 above hard 4; the soft limit must not exceed the hard limit."),
        ([{"type": "RLIMIT_MEMLOCK", "soft": "unlimited", "hard": "8M"}],
         "rlimits[0] (RLIMIT_MEMLOCK) has soft unlimited above hard 8388608; the soft limit must not exceed the hard limit."),
        ([{"type": "RLIMIT_MEMLOCK", "soft": -1, "hard": 4}], "rlimits[0].soft must not be negative, got -1."),
        ([{"type": "RLIMIT_MEMLOCK", "soft": 1, "hard": "-4"}], "rlimits[0].hard must not be negative, got '-4'."),
        ([{"type": "RLIMIT_MEMLOCK"}], "rlimits[0] (RLIMIT_MEMLOCK) needs a soft or a hard value."),
        ([{"type": "RLIMIT_MEMLOCK", "soft": 1, "value": 2}],
         "rlimits[0] has unknown key(s) value; expected type, soft, hard and state."),
        ([{"type": "MEMLOCK", "soft": 1}, {"type": "RLIMIT_MEMLOCK", "soft": 2}],
         "rlimits[1] repeats RLIMIT_MEMLOCK, already given in rlimits[0]; list each type once."),
        ([{"type": "RLIMIT_MEMLOCK", "soft": 1, "state": "gone"}],
         "rlimits[0].state must be present or absent, got 'gone'."),
    ],
)
def test_normalize_rlimits_rejects(value, message):
    with pytest.raises(RlimitError) as error:
        normalize_rlimits(value)
    assert str(error.value) == message


def test_normalize_rlimits_unknown_type():
    with pytest.raises(RlimitError) as error:
        normalize_rlimits([{"type": "RLIMIT_FOO", "soft": 1}])
    assert str(error.value).startswith("rlimits[0].type 'RLIMIT_FOO' is not a Linux resource limit; expected one of ")


# ---------------------------------------------------------------------------------------------
# systemd: the accept/reject cases below were checked one by one against systemd 252's own parser
# (systemd-analyze verify); tests/integration/test_memlock_real_runtime.py repeats that check live.
# ---------------------------------------------------------------------------------------------

SYSTEMD_ACCEPTS = [
    ("LimitMEMLOCK", "infinity", (RLIM_INFINITY, RLIM_INFINITY)),
    ("LimitMEMLOCK", "8M", (8388608, 8388608)),
    ("LimitMEMLOCK", " 8M", (8388608, 8388608)),
    ("LimitMEMLOCK", "64K", (65536, 65536)),
    ("LimitMEMLOCK", "8B", (8, 8)),
    ("LimitMEMLOCK", "1E", (1024 ** 6, 1024 ** 6)),
    ("LimitMEMLOCK", "1.5K", (1536, 1536)),
    ("LimitMEMLOCK", "1G 512M", (1024 ** 3 + 512 * 1024 ** 2,) * 2),
    ("LimitMEMLOCK", "1048576", (1048576, 1048576)),
    ("LimitMEMLOCK", "1024:2048", (1024, 2048)),
    ("LimitMEMLOCK", "4M:infinity", (4194304, RLIM_INFINITY)),
    ("LimitMEMLOCK", "infinity:infinity", (RLIM_INFINITY, RLIM_INFINITY)),
    ("LimitMEMLOCK", "18446744073709551614", (RLIM_INFINITY - 1,) * 2),
    ("LimitNOFILE", "1048576", (1048576, 1048576)),
    ("LimitNOFILE", "infinity", (RLIM_INFINITY, RLIM_INFINITY)),
    ("LimitNOFILE", "1024:4096", (1024, 4096)),
    ("LimitNOFILE", "+5", (5, 5)),
    ("LimitCPU", "10", (10, 10)),
    ("LimitCPU", "10s", (10, 10)),
    ("LimitCPU", "1min", (60, 60)),
    ("LimitCPU", "1h 5min", (3900, 3900)),
    ("LimitCPU", "1.5", (2, 2)),
    ("LimitRTTIME", "500ms", (500000, 500000)),
    ("LimitNICE", "0", (0, 0)),
    ("LimitNICE", "40", (40, 40)),
    ("LimitNICE", "+5", (15, 15)),
    ("LimitNICE", "+19", (1, 1)),
    ("LimitNICE", "-20", (40, 40)),
]

SYSTEMD_REJECTS = [
    ("LimitMEMLOCK", "Infinity:4M"),
    ("LimitMEMLOCK", "8m"),
    ("LimitMEMLOCK", "8MiB"),
    ("LimitMEMLOCK", "2048:1024"),
    ("LimitMEMLOCK", "infinity:4M"),
    ("LimitMEMLOCK", "-1"),
    ("LimitMEMLOCK", "0x10"),
    ("LimitMEMLOCK", "16E"),
    ("LimitMEMLOCK", ""),
    ("LimitMEMLOCK", "18446744073709551615"),
    ("LimitNOFILE", "64K"),
    ("LimitNOFILE", "1.0"),
    ("LimitNICE", "41"),
    ("LimitNICE", "-21"),
    ("LimitNICE", "+20"),
]


@pytest.mark.parametrize("directive, value, expected", SYSTEMD_ACCEPTS)
def test_parse_systemd_limit_accepts_what_systemd_accepts(directive, value, expected):
    text, parsed = parse_systemd_limit(directive, value)
    assert parsed == expected
    assert text == value.strip()


@pytest.mark.parametrize("directive, value", SYSTEMD_REJECTS)
def test_parse_systemd_limit_rejects_what_systemd_ignores(directive, value):
    with pytest.raises(RlimitError) as error:
        parse_systemd_limit(directive, value, "limits.X")
    assert str(error.value).startswith("limits.X ")
    assert str(error.value).endswith(".")


def test_parse_systemd_limit_aliases_and_integers():
    assert parse_systemd_limit("LimitMEMLOCK", "unlimited") == ("infinity", (RLIM_INFINITY, RLIM_INFINITY))
    assert parse_systemd_limit("LimitMEMLOCK", "Infinity") == ("infinity", (RLIM_INFINITY, RLIM_INFINITY))
    assert parse_systemd_limit("LimitMEMLOCK", "64M:unlimited") == ("64M:infinity", (64 * 1024 ** 2, RLIM_INFINITY))
    assert parse_systemd_limit("LimitNOFILE", 1048576) == ("1048576", (1048576, 1048576))


@pytest.mark.parametrize(
    "directive, value, message",
    [
        ("LimitMEMLOCK", "2048:1024",
         "limits.MEMLOCK has the soft limit 2048 above the hard limit 1024; systemd would ignore it."),
        ("LimitMEMLOCK", "-1", "limits.MEMLOCK must not be negative, got '-1'."),
        ("LimitMEMLOCK", -1, "limits.MEMLOCK must not be negative, got -1."),
        ("LimitMEMLOCK", "8m", "limits.MEMLOCK must be infinity, a size in bytes (suffixes B, K, M, G, T, P, E; "
                               "1024-based), or soft:hard of those, got '8m'."),
        ("LimitNOFILE", "64K", "limits.MEMLOCK must be infinity, a plain number, or soft:hard of those, got '64K'."),
        ("LimitMEMLOCK", True, "limits.MEMLOCK must be infinity or a size in bytes (suffixes B, K, M, G, T, P, E; "
                               "1024-based), got True."),
        ("LimitMEMLOCK", 1.5, "limits.MEMLOCK must be infinity or a size in bytes (suffixes B, K, M, G, T, P, E; "
                              "1024-based), got a float."),
    ],
)
def test_parse_systemd_limit_messages(directive, value, message):
    with pytest.raises(RlimitError) as error:
        parse_systemd_limit(directive, value, "limits.MEMLOCK")
    assert str(error.value) == message


@pytest.mark.parametrize("key", ["MEMLOCK", "memlock", "LimitMEMLOCK", "RLIMIT_MEMLOCK", "limitMemlock"])
def test_normalize_systemd_directive(key):
    assert normalize_systemd_directive(key) == "LimitMEMLOCK"


def test_normalize_systemd_limits_sorts_and_normalises():
    assert normalize_systemd_limits({"NOFILE": 1048576, "LimitMEMLOCK": "unlimited", "core": "0"}) == {
        "LimitCORE": "0",
        "LimitMEMLOCK": "infinity",
        "LimitNOFILE": "1048576",
    }
    assert list(normalize_systemd_limits({"NOFILE": 1, "MEMLOCK": 2})) == ["LimitMEMLOCK", "LimitNOFILE"]
    assert normalize_systemd_limits(None) == {}


@pytest.mark.parametrize(
    "limits, message",
    [
        (["MEMLOCK"], "limits must be a dict such as {MEMLOCK: infinity, NOFILE: 1048576}, got a list."),
        ({"MEMLOCK": 1, "LimitMEMLOCK": 2}, "limits sets LimitMEMLOCK twice (as MEMLOCK and LimitMEMLOCK); give it once."),
        ({"MEMLOK": 1}, "limits key 'MEMLOK' is not a systemd resource limit; expected one of "
                        + ", ".join(SYSTEMD_DIRECTIVES) + " (the Limit prefix is optional)."),
        ({"MEMLOCK": "2048:1024"},
         "limits.MEMLOCK has the soft limit 2048 above the hard limit 1024; systemd would ignore it."),
    ],
)
def test_normalize_systemd_limits_rejects(limits, message):
    with pytest.raises(RlimitError) as error:
        normalize_systemd_limits(limits)
    assert str(error.value) == message
