"""What Python 3.10 lacks of the newer standard library, written once (pure Python).

- `UTC`: `datetime.UTC` (3.11+) is `datetime.timezone.utc`.
- `StrEnum`: `enum.StrEnum` (3.11+); the fallback's members are strs whose `str()` and
  `format()` give their value, as StrEnum's do.
"""
import sys
from datetime import timezone
from enum import Enum

UTC = timezone.utc

if sys.version_info >= (3, 11):
    from enum import StrEnum
else:  # pragma: no cover - Python 3.10
    class StrEnum(str, Enum):
        def __str__(self) -> str:
            return str(self.value)

        def __format__(self, spec: str) -> str:
            return str.__format__(str(self.value), spec)

__all__ = ["UTC", "StrEnum"]
