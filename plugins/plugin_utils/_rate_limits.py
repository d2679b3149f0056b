# -*- coding: utf-8 -*-
# Copyright: rdma.node contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Limits that carry their unit, and the judgement of a counter's rise against one.

NVSentinel, the fleet monitor these defaults follow, states its counter limits per second, per
minute or per hour (``link_error_recovery`` above 5 per minute, ``port_xmit_discards`` above 100 per
second, ``symbol_error`` above 120 per hour) and "any rise" for the counters that mean a failed
transfer (``rnr_nak_retry_err``). A limit here is written the same way:

* ``0`` (or ``"0"``, ``"any"``): any rise;
* ``"5/min"``, ``"100/s"``, ``"120/h"`` (also ``sec``/``second``, ``minute``, ``hr``/``hour``, ``day``,
  and ``per`` instead of ``/``);
* a bare number: per hour, what ``node_health_counter_rise_limits`` always meant;
* a mapping ``{rate: "5/min", severity: warning}`` to say how bad a breach is (default critical).

The rise is judged as the average rate between the two samples: a limit per second is an average
over the sampled interval, not a peak, so short intervals (``node_health_counters_interval``) see
bursts that a day between two runs smooths out.
"""

from __future__ import annotations

import collections
import math
import re

UNIT_SECONDS = {"s": 1.0, "min": 60.0, "h": 3600.0, "day": 86400.0}
_UNIT_WORDS = {"s": "s", "sec": "s", "secs": "s", "second": "s", "seconds": "s",
               "m": "min", "min": "min", "mins": "min", "minute": "min", "minutes": "min",
               "h": "h", "hr": "h", "hrs": "h", "hour": "h", "hours": "h", "d": "day", "day": "day", "days": "day"}
_UNIT_NAMES = {"s": "second", "min": "minute", "h": "hour", "day": "day"}
_RATE = re.compile(r"^\s*(?P<count>[0-9]+(?:\.[0-9]+)?)\s*(?:/|\s+per\s+)\s*(?P<unit>[a-z]+)\s*$", re.IGNORECASE)
SEVERITIES = ("critical", "warning", "info")

RateLimit = collections.namedtuple("RateLimit", "count unit severity text")


class RateLimitError(ValueError):
    """A limit that cannot be read; the message names the option, the counter and what was expected."""


def _fail(where, value):
    raise RateLimitError("%s: expected 0 (any rise), a number per hour, or a rate such as 5/min, 100/s or 120/h, got %r"
                         % (where, value))


def parse_rate_limit(value, where="limit", default_severity="critical"):
    """A :class:`RateLimit` from an option value; :class:`RateLimitError` naming ``where`` otherwise."""
    severity = default_severity
    if isinstance(value, dict):
        unknown = sorted(set(value) - {"rate", "severity"})
        if unknown or "rate" not in value:
            raise RateLimitError("%s: a mapping takes 'rate' and optionally 'severity', got %s" % (where, ", ".join(sorted(value)) or "nothing"))
        severity = value.get("severity") or default_severity
        if severity not in SEVERITIES:
            raise RateLimitError("%s: severity must be one of %s, got %r" % (where, ", ".join(SEVERITIES), severity))
        value = value["rate"]
    if isinstance(value, bool):
        _fail(where, value)
    if isinstance(value, (int, float)):
        if not math.isfinite(value) or value < 0:
            _fail(where, value)
        return RateLimit(float(value), "h", severity, "any rise" if value == 0 else "%g per hour" % value)
    if not isinstance(value, str):
        _fail(where, value)
    text = value.strip()
    if text.lower() in ("0", "any", "any rise"):
        return RateLimit(0.0, "h", severity, "any rise")
    try:
        number = float(text)
    except ValueError:
        number = None
    if number is not None:
        return parse_rate_limit(number, where, severity)
    match = _RATE.match(text)
    unit = _UNIT_WORDS.get(match.group("unit").lower()) if match else None
    if unit is None:
        _fail(where, value)
    count = float(match.group("count"))
    return RateLimit(count, unit, severity, "any rise" if count == 0 else "%g per %s" % (count, _UNIT_NAMES[unit]))


def parse_rate_limits(mapping, option):
    """``{counter: RateLimit}`` of an option such as ``node_health_counter_rise_limits``."""
    if mapping is None:
        return {}
    if not isinstance(mapping, dict):
        raise RateLimitError("%s: expected a mapping of counter name to a limit, got %r" % (option, mapping))
    return {str(name): parse_rate_limit(value, "%s.%s" % (option, name)) for name, value in mapping.items()}


def rate_in(limit_unit, before, after, seconds):
    """The average rise of a counter between two samples, per ``limit_unit``."""
    return (after - before) * UNIT_SECONDS[limit_unit] / seconds


def judge_rise(before, after, seconds, limit):
    """None when the rise from ``before`` to ``after`` in ``seconds`` stays within ``limit``, else
    ``{"rate", "unit", "limit", "severity", "text"}`` with the rate in the limit's unit.

    A counter that went down (cleared, or a replaced card) and a non-positive interval are not a rise.
    """
    if seconds is None or seconds <= 0 or after is None or before is None or after <= before:
        return None
    rate = rate_in(limit.unit, before, after, seconds)
    if limit.count == 0 or rate > limit.count:
        return {"rate": rate, "unit": limit.unit, "limit": limit.count, "severity": limit.severity,
                "text": "%s per %s" % (_format(rate), _UNIT_NAMES[limit.unit])}
    return None


def _format(rate):
    """Few digits, but never so few that a breach reads as the limit (100.02 per second, not 100)."""
    return "%.3g" % rate if rate < 10 else "%.5g" % rate
