"""Durations written the way operators write them: 90s, 15m, 12h, 7d, 2w (or plain seconds)."""
import re
from datetime import timedelta

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
_PATTERN = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw]?)\s*$", re.IGNORECASE)


def parse_duration(value: str | int | float | timedelta) -> timedelta:
    """'90s' -> 90 s, '15m', '12h', '7d', '2w'; a bare number is seconds. Raises ValueError."""
    if isinstance(value, timedelta):
        seconds = value.total_seconds()
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        seconds = float(value)
    else:
        match = _PATTERN.match(str(value))
        if not match:
            raise ValueError(
                f"bad duration {value!r}: expected a number with an optional unit s, m, h, d "
                "or w (90s, 15m, 12h, 7d)")
        seconds = float(match.group(1)) * _UNITS[(match.group(2) or "s").lower()]
    if seconds < 0:
        raise ValueError(f"bad duration {value!r}: must not be negative")
    return timedelta(seconds=seconds)


def parse_retention(value: str | None) -> timedelta | None:
    """A retention setting: a duration, or ''/'0'/'off'/'never' for keep forever (None)."""
    if value is None or str(value).strip().lower() in ("", "0", "off", "never", "none"):
        return None
    duration = parse_duration(value)
    return duration if duration.total_seconds() > 0 else None
