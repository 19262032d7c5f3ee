"""Typed reads of YAML data that record a problem — with its path and line — instead of raising.

Each reader returns the value in the type the configuration needs, or ``None`` after recording why it
cannot (readers of nullable fields return ``(ok, value)``). They read the YAML's shape; what a value
may mean is checked by ``rules.config.validators``. Pure Python, no Django.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Iterable
from decimal import Decimal
from typing import Any

from rules.config.validators import KEY as KEY
from rules.config.validators import key_problem, storable_problem

from .yamlload import LoadedYaml, Path

_TIME = re.compile(r"(\d{1,2}):(\d{2})(?::(\d{2}))?")
_MAX_INT = 2_147_483_647  # PositiveIntegerField's ceiling on PostgreSQL
_MAX_DIGITS_BEFORE_POINT = 12  # DecimalField(max_digits=18, decimal_places=6)
_DECIMAL_PLACES = 6


def describe(value: Any) -> str:
    if value is None:
        return "nothing (null)"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, str):
        return f"the text {value!r}"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, dt.datetime):
        return "a date and time"
    if isinstance(value, dt.date):
        return "a date"
    return f"a value of type {type(value).__name__}"


def one_of(choices: Iterable[str]) -> str:
    return ", ".join(choices)


def clause(message: str) -> str:
    """A validator's sentence ("The operator > needs ….") as the clause of a YAML problem ("the operator > needs …")."""
    message = message.rstrip().rstrip(".")
    # "The …" and "A …" become "the …" and "a …"; an acronym ("IANA …") stays as it is.
    if len(message) > 1 and message[0].isupper() and (message[1].islower() or message[1] == " "):
        message = message[0].lower() + message[1:]
    return message


class Reader:
    """Reads values out of a loaded YAML document, adding a problem to it for each value that does not fit."""

    def __init__(self, loaded: LoadedYaml) -> None:
        self.y = loaded

    def problem(self, path: Path, message: str) -> None:
        self.y.problem(path, message)

    def count(self) -> int:
        return len(self.y.problems)

    def mapping(
        self, value: Any, path: Path, keys: tuple[str, ...], required: tuple[str, ...], what: str = ""
    ) -> dict[str, Any] | None:
        if not isinstance(value, dict):
            self.problem(path, f"expected {what or 'a mapping'}, got {describe(value)}")
            return None
        for key in value:
            if key not in keys:
                self.problem((*path, key), f"unknown key '{key}' (expected one of: {one_of(keys)})")
        for key in required:
            if key not in value:
                self.problem(path, f"missing required key '{key}'")
        return value

    def sequence(self, value: Any, path: Path) -> list[Any] | None:
        if not isinstance(value, list):
            self.problem(path, f"expected a list, got {describe(value)}")
            return None
        return value

    def text(self, value: Any, path: Path, *, max_length: int | None = None) -> str | None:
        if isinstance(value, str):
            text = value
        elif value is not None and not isinstance(value, list | dict) and path in self.y.raw:
            # An unquoted 12315 or yes where text is expected: take it as the author wrote it.
            text = self.y.raw[path]
        else:
            self.problem(path, f"expected text, got {describe(value)}")
            return None
        if max_length is not None and len(text) > max_length:
            self.problem(path, f"longer than {max_length} characters")
            return None
        if problem := storable_problem(text):
            self.problem(path, clause(problem))
            return None
        return text

    def optional_text(self, record: dict[str, Any], path: Path, name: str, max_length: int | None = None) -> str:
        value = record.get(name)
        if value is None:
            return ""
        return self.text(value, (*path, name), max_length=max_length) or ""

    def key(self, value: Any, path: Path) -> str | None:
        text = self.text(value, path)
        if text is None:
            return None
        if problem := key_problem(text):
            self.problem(path, clause(problem))
            return None
        return text

    def key_list(self, value: Any, path: Path, *, non_empty: str = "") -> list[str] | None:
        items = self.sequence(value, path)
        if items is None:
            return None
        result: list[str] = []
        seen: dict[str, int] = {}
        ok = True
        for index, item in enumerate(items):
            key = self.key(item, (*path, index))
            if key is None:
                ok = False
            elif key in seen:
                self.problem((*path, index), f"'{key}' is listed twice (also at [{seen[key]}])")
                ok = False
            else:
                seen[key] = index
                result.append(key)
        if ok and non_empty and not result:
            self.problem(path, non_empty)
            return None
        return result if ok else None

    def choice(
        self, record: dict[str, Any], path: Path, name: str, choices: list[str], default: str | None
    ) -> str | None:
        """One of ``choices``; a missing or null value is ``default``, or a problem when there is none."""
        value = record.get(name)
        if value is None and default is not None:
            return default
        if value is None:
            self.problem((*path, name), f"expected one of {one_of(choices)}, got nothing (null)")
            return None
        text = self.text(value, (*path, name))
        if text is None:
            return None
        if text not in choices:
            self.problem((*path, name), f"'{text}' is not one of {one_of(choices)}")
            return None
        return text

    def boolean(self, record: dict[str, Any], path: Path, name: str, default: bool) -> bool | None:
        value = record.get(name)
        if value is None:
            return default
        if not isinstance(value, bool):
            self.problem((*path, name), f"expected true or false, got {describe(value)}")
            return None
        return value

    def integer(self, value: Any, path: Path, *, minimum: int) -> int | None:
        if isinstance(value, bool) or not isinstance(value, int) or not minimum <= value <= _MAX_INT:
            self.problem(path, f"expected a whole number ≥ {minimum}, got {describe(value)}")
            return None
        return value

    def number(self, value: Any, path: Path) -> Decimal | None:
        if isinstance(value, bool) or not isinstance(value, int | float):
            self.problem(path, f"expected a number, got {describe(value)}")
            return None
        if isinstance(value, float) and not math.isfinite(value):
            self.problem(path, f"expected a finite number, got {value}")
            return None
        # str() of a float is its shortest exact spelling — the digits export writes back.
        number = Decimal(str(value))
        if abs(number) >= 10**_MAX_DIGITS_BEFORE_POINT:
            self.problem(path, f"{value} is too large (at most {_MAX_DIGITS_BEFORE_POINT} digits before the point)")
            return None
        if number != number.quantize(Decimal(1).scaleb(-_DECIMAL_PLACES)):
            self.problem(path, f"{value} has more than {_DECIMAL_PLACES} decimal places")
            return None
        return number

    def optional_number(self, record: dict[str, Any], path: Path, name: str) -> tuple[bool, Decimal | None]:
        value = record.get(name)
        if value is None:
            return True, None
        number = self.number(value, (*path, name))
        return number is not None, number

    def moment(self, record: dict[str, Any], path: Path, name: str) -> tuple[bool, dt.datetime | None]:
        value = record.get(name)
        path = (*path, name)
        if value is None:
            return True, None
        example = "e.g. 2025-06-01T00:00:00Z or 2025-06-01T08:00:00+08:00"
        if isinstance(value, dt.datetime):
            moment = value
        elif isinstance(value, dt.date):
            self.problem(path, f"give a date and time, not only a date ({example})")
            return False, None
        elif isinstance(value, str):
            try:
                moment = dt.datetime.fromisoformat(value.strip())
            except ValueError:
                self.problem(path, f"'{value}' is not an ISO-8601 date and time ({example})")
                return False, None
        else:
            self.problem(path, f"expected a date and time, got {describe(value)}")
            return False, None
        if moment.utcoffset() is None:
            self.problem(path, f"give the time zone offset ({example})")
            return False, None
        try:
            moment.astimezone(dt.UTC)
        except OverflowError:
            self.problem(path, f"'{value}' is out of the range of dates that can be stored")
            return False, None
        return True, moment

    def time_of_day(self, value: Any, path: Path) -> dt.time | None:
        text = self.text(value, path)
        if text is None:
            return None
        match = _TIME.fullmatch(text.strip())
        if match:
            hour, minute, second = (int(g) if g else 0 for g in match.groups())
            if hour <= 23 and minute <= 59 and second <= 59:
                return dt.time(hour, minute, second)
        self.problem(path, f"expected a time of day as HH:MM, got '{text}'")
        return None

    def unique(self, records: list[tuple[Path, str]], section: str) -> None:
        """Report every record whose key an earlier record of the same section already has."""
        first: dict[str, Path] = {}
        for path, key in records:
            if key in first:
                earlier = first[key]
                self.problem(
                    (*path, "key"),
                    f"duplicate key '{key}': {section}[{earlier[-1]}] (line {self.y.line_of(earlier)}) has it too",
                )
            else:
                first[key] = path


def or_default(record: dict[str, Any], name: str, default: Any) -> Any:
    """An optional field: missing or null means the default."""
    value = record.get(name)
    return default if value is None else value
