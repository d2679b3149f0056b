"""Limits that carry their unit (NVSentinel's counter limits as written in its documentation) and the
judgement of a rise between two samples against them."""

from __future__ import annotations

import pytest

from ansible_collections.rdma.node.plugins.plugin_utils._rate_limits import (
    RateLimit,
    RateLimitError,
    judge_rise,
    parse_rate_limit,
    parse_rate_limits,
)


@pytest.mark.parametrize("value, limit", [
    (0, RateLimit(0.0, "h", "critical", "any rise")),
    ("any", RateLimit(0.0, "h", "critical", "any rise")),
    (120, RateLimit(120.0, "h", "critical", "120 per hour")),      # today's option: a bare number is per hour
    ("120", RateLimit(120.0, "h", "critical", "120 per hour")),
    ("5/min", RateLimit(5.0, "min", "critical", "5 per minute")),
    ("100/s", RateLimit(100.0, "s", "critical", "100 per second")),
    ("10 per second", RateLimit(10.0, "s", "critical", "10 per second")),
    ("1.5 / hour", RateLimit(1.5, "h", "critical", "1.5 per hour")),
    ({"rate": "5/min", "severity": "warning"}, RateLimit(5.0, "min", "warning", "5 per minute")),
])
def test_limits(value, limit):
    assert parse_rate_limit(value) == limit


@pytest.mark.parametrize("value, message", [
    ("5/fortnight", r"^node_health_counter_rise_limits.symbol_error: expected 0 \(any rise\), a number per hour, or a rate such as"),
    (-1, r"expected 0 \(any rise\)"), (True, r"expected 0"), (float("nan"), r"expected 0"), ([5], r"expected 0"),
    ({"rate": "5/min", "severity": "fatal"}, r"severity must be one of critical, warning, info, got 'fatal'$"),
    ({"limit": 5}, r"a mapping takes 'rate' and optionally 'severity', got limit$"),
])
def test_bad_limits_name_the_option_and_counter(value, message):
    with pytest.raises(RateLimitError, match=message):
        parse_rate_limits({"symbol_error": value}, "node_health_counter_rise_limits")


def test_judging_a_rise_in_the_limits_unit():
    per_minute = parse_rate_limit("5/min")
    assert judge_rise(10, 14, 60.0, per_minute) is None             # 4 per minute
    breach = judge_rise(10, 22, 60.0, per_minute)                    # 12 per minute
    assert breach == {"rate": 12.0, "unit": "min", "limit": 5.0, "severity": "critical", "text": "12 per minute"}
    # The same rise judged per second and per hour: an average over the interval, in each unit.
    assert judge_rise(0, 3600, 3600.0, parse_rate_limit("100/s")) is None
    assert judge_rise(0, 121, 3600.0, parse_rate_limit(120))["text"] == "121 per hour"
    assert judge_rise(5, 6, 86400.0, parse_rate_limit(0))["text"] == "0.0417 per hour"  # one in a day: any rise


@pytest.mark.parametrize("before, after, seconds", [(10, 10, 60.0), (10, 3, 60.0), (1, 5, 0.0), (1, 5, -3.0), (None, 5, 60.0)])
def test_no_rise_no_judgement(before, after, seconds):
    assert judge_rise(before, after, seconds, parse_rate_limit(0)) is None
