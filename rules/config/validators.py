"""What a valid configuration is, checked once: pure functions over the configuration's plain values.

The models' ``clean()`` (and so the admin forms and the record services), the YAML validator
(``rules.config.document.validate``) and each kind of condition (``rules.config.condition_kinds``) call these, so every
path refuses the same things with the same words. Like ``rules.config.machine_definitions.machine_problems`` they take
plain values — no database, no model instances — and answer ``None`` or a field → message mapping.

Messages are sentences ("Not a valid key: A."); the YAML validator turns them into clauses before its
``(line N)`` (``rules.config.document.readers.clause``). Where a message has to name the item it is about, it
does so only when the caller's field does not: a model field holds all of a point's facts, while a
YAML path already names the fact (``points[0].facts.amount``), so some checks take the item's name as
``subject`` and phrase the message with it.

Pure functions: no database, no models. Messages go through Django's ``gettext``, so they are in the
active language: the operator's in the admin, English in the API (``ApiEnglishMiddleware``) and in
management commands and workers (``LANGUAGE_CODE``).
"""

from __future__ import annotations

import datetime as dt
import math
import re
import zoneinfo
from collections.abc import Collection, Iterable, Mapping, Sequence
from decimal import Decimal
from typing import Any

from django.utils.translation import gettext, gettext_lazy, gettext_noop

from rules.engine.masking import BUILTIN_PATTERNS
from rules.engine.normalize import normalize_term

# Keys name records and values rules refer to: thresholds, lists, points, rules, outcomes, facts, states.
KEY = re.compile(r"[a-z][a-z0-9_]{0,63}")
KEY_RULE = gettext_noop("lower-case letters, digits and underscores, starting with a letter")
KEY_MESSAGE = gettext_lazy("Use lower-case letters, digits and underscores, starting with a letter (at most 64).")

FACT_TYPES = ("string", "number", "integer", "boolean", "string_list")
NUMERIC_FACT_TYPES = frozenset({"number", "integer"})
OPERATORS = ("<", "<=", ">", ">=", "==", "!=", "in")
ORDERING_OPERATORS = frozenset({"<", "<=", ">", ">="})
MATCH_MODES = ("substring", "word", "segmented", "regex")

# A keyword term is stored in a column of 200 characters; a regular expression anywhere in the
# configuration is held to the same length, so every pattern the engine compiles is bounded alike.
MAX_TERM_LENGTH = 200


def is_key(value: Any) -> bool:
    return isinstance(value, str) and KEY.fullmatch(value) is not None


def key_problem(value: str) -> str | None:
    """One key that is not well formed."""
    if is_key(value):
        return None
    return gettext("'%(value)s' is not a valid key (use %(rule)s, at most 64).") % {
        "value": value,
        "rule": gettext(KEY_RULE),
    }


def key_list_problem(value: Any) -> str | None:
    """A stored list of keys (outcomes, a whitelist, states): well formed, each key once."""
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        return gettext("Give a list of keys.")
    dupes = sorted({v for v in value if value.count(v) > 1})
    if dupes:
        return gettext("Listed more than once: %(keys)s.") % {"keys": ", ".join(dupes)}
    bad = [v for v in value if not is_key(v)]
    if bad:
        return gettext("Not a valid key: %(keys)s.") % {"keys": ", ".join(bad)}
    return None


# --- text that can be stored ------------------------------------------------------------------------


def storable_problem(text: str) -> str | None:
    """Text PostgreSQL cannot store (a NUL) or no database can (an unpaired surrogate is not UTF-8)."""
    if "\x00" in text:
        return gettext("Text cannot hold a NUL character.")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return gettext("Text cannot hold an unpaired surrogate (U+D800 to U+DFFF).")
    return None


def _texts(value: Any) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield from _texts(key)
            yield from _texts(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _texts(item)


def storable_problems(fields: Mapping[str, Any]) -> dict[str, str]:
    """Field → problem for every field whose text (or text inside a list or mapping) cannot be stored."""
    problems: dict[str, str] = {}
    for name, value in fields.items():
        problem = next(filter(None, map(storable_problem, _texts(value))), None)
        if problem:
            problems[name] = problem
    return problems


# --- time zones and regular expressions -----------------------------------------------------------


def time_zone_problem(name: str) -> str | None:
    try:
        zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        return gettext("'%(name)s' is not a known time zone (use an IANA name such as Asia/Shanghai).") % {"name": name}
    return None


def regex_problem(pattern: str, *, subject: str = "") -> str | None:
    """A pattern that does not compile as the engine compiles it (case-insensitive)."""
    try:
        re.compile(pattern, re.IGNORECASE)
    except (re.error, OverflowError, RecursionError) as exc:  # a{9999999999} overflows rather than errs
        if subject:
            return gettext("'%(subject)s' is not a valid regular expression: %(error)s.") % {
                "subject": subject,
                "error": exc,
            }
        return gettext("Not a valid regular expression: %(error)s.") % {"error": exc}
    return None


def pattern_problem(pattern: Any) -> str | None:
    """A regular expression a condition matches with: held to the limits of a regex keyword term.

    ``pattern`` is taken as stored (``normalize_term(..., "regex")``: trimmed, case kept).
    """
    if not isinstance(pattern, str) or not pattern:
        return gettext("Give the regular expression.")
    if len(pattern) > MAX_TERM_LENGTH:
        return gettext("The regular expression is longer than %(limit)s characters.") % {"limit": MAX_TERM_LENGTH}
    return storable_problem(pattern) or regex_problem(pattern)


# --- thresholds -----------------------------------------------------------------------------------


def plain_number(value: Decimal) -> str:
    """``Decimal('0.650000')`` → ``'0.65'``; ``Decimal('500.000000')`` → ``'500'``."""
    return format(value.normalize(), "f")


def bounds_text(low: Decimal | None, high: Decimal | None, unit: str = "") -> str:
    low_text = "−∞" if low is None else plain_number(low)
    high_text = "+∞" if high is None else plain_number(high)
    return f"{low_text} … {high_text}{(' ' + unit) if unit else ''}"


def threshold_problems(
    *, value: Decimal | None, min_value: Decimal | None, max_value: Decimal | None, unit: str = ""
) -> dict[str, str]:
    """A threshold's value lies within its bounds, and the bounds are in order."""
    if min_value is not None and max_value is not None and min_value > max_value:
        return {
            "max_value": gettext("The upper bound %(high)s is below the lower bound %(low)s.")
            % {"high": plain_number(max_value), "low": plain_number(min_value)}
        }
    if value is not None and (
        (min_value is not None and value < min_value) or (max_value is not None and value > max_value)
    ):
        return {
            "value": gettext("%(value)s is outside the allowed bounds %(bounds)s.")
            % {"value": plain_number(value), "bounds": bounds_text(min_value, max_value, unit)}
        }
    return {}


# --- keyword lists --------------------------------------------------------------------------------


def term_problem(term: str, match_mode: str, *, subject: str = "") -> str | None:
    """One term as it is stored (``normalize_term``): not empty, storable, a valid pattern in regex mode."""
    if not term:
        return gettext("A term cannot be empty.")
    problem = storable_problem(term)
    if problem is None and match_mode == "regex":
        problem = regex_problem(term, subject=subject)
    return problem


class TermSet:
    """The terms of one list as they are stored: which term is one the list already holds."""

    def __init__(self, match_mode: str) -> None:
        self._match_mode = match_mode
        self._first: dict[str, int] = {}

    def add(self, term: str, position: int) -> int | None:
        """Add ``term`` (as written) at ``position``; the position of the same term added before, if any."""
        stored = normalize_term(term, self._match_mode)
        earlier = self._first.get(stored)
        if earlier is None:
            self._first[stored] = position
        return earlier


def same_terms(terms: Sequence[str], match_mode: str) -> dict[int, int]:
    """Index → index of an earlier term that is the same term once both are stored (normalised)."""
    seen = TermSet(match_mode)
    return {index: earlier for index, term in enumerate(terms) if (earlier := seen.add(term, index)) is not None}


# --- decision points ------------------------------------------------------------------------------

NO_OUTCOMES = gettext_noop("A decision point needs at least one outcome.")


def fact_name_problem(name: Any) -> str | None:
    if is_key(name):
        return None
    return gettext("Fact name '%(name)s' is not a valid key.") % {"name": name}


def fact_type_problem(fact_type: Any, *, subject: str = "") -> str | None:
    """A declared fact's type is one of ``FACT_TYPES``; ``subject``: the fact, to name it in the message."""
    if fact_type in FACT_TYPES:
        return None
    if subject:
        return gettext("Fact '%(fact)s' has unknown type '%(type)s' (use %(types)s).") % {
            "fact": subject,
            "type": fact_type,
            "types": ", ".join(FACT_TYPES),
        }
    return gettext("Unknown fact type '%(type)s' (use %(types)s).") % {
        "type": fact_type,
        "types": ", ".join(FACT_TYPES),
    }


def declared_fact_problem(fact: str, facts: Mapping[str, str], point: str) -> str | None:
    """A condition's fact is one its point declares."""
    if fact in facts:
        return None
    return gettext("'%(fact)s' is not a declared fact of %(point)s.") % {"fact": fact, "point": point}


def outcome_problem(outcome: str, outcomes: Collection[str], owner: str) -> str | None:
    """One outcome a record names is an outcome of ``owner`` (a point's key, or "this point")."""
    if outcome in outcomes:
        return None
    return gettext("'%(outcome)s' is not an outcome of %(owner)s.") % {"outcome": outcome, "owner": owner}


def outcomes_problem(listed: Sequence[str], outcomes: Collection[str], owner: str) -> str | None:
    """Every outcome of a list is an outcome of ``owner``."""
    stray = [o for o in listed if o not in outcomes]
    if stray:
        return gettext("Not an outcome of %(owner)s: %(outcomes)s.") % {"owner": owner, "outcomes": ", ".join(stray)}
    return None


def masking_problems(skip: Any, patterns: Any) -> dict[str, str]:
    problems: dict[str, str] = {}
    if not isinstance(skip, list) or any(s not in BUILTIN_PATTERNS for s in skip):
        problems["mask_skip"] = gettext("List built-in masks to skip, from: %(masks)s.") % {
            "masks": ", ".join(BUILTIN_PATTERNS)
        }
    if not isinstance(patterns, dict):
        problems["mask_patterns"] = gettext("Give the patterns as a mapping of name to regular expression.")
        return problems
    for name, pattern in patterns.items():
        if not is_key(name):
            problems["mask_patterns"] = gettext("'%(name)s' is not a valid name for a mask.") % {"name": name}
        elif not isinstance(pattern, str) or not pattern:
            problems["mask_patterns"] = gettext("The mask '%(name)s' needs a regular expression.") % {"name": name}
        elif problem := storable_problem(pattern):
            problems["mask_patterns"] = gettext("The mask '%(name)s': %(problem)s") % {
                "name": name,
                "problem": f"{problem[0].lower()}{problem[1:]}",
            }
        else:
            try:
                re.compile(pattern)
            except (re.error, OverflowError, RecursionError) as exc:
                problems["mask_patterns"] = gettext(
                    "The mask '%(name)s' is not a valid regular expression: %(error)s."
                ) % {
                    "name": name,
                    "error": exc,
                }
    return problems


def fact_masking_problems(paths: Any, mask_facts: Any, facts: Mapping[str, str] | None) -> dict[str, str]:
    """A point's fact paths: dotted keys, each starting with a fact the point declares (``facts``; None when
    the facts are unreadable), and none given when the point does not mask its facts."""
    if not isinstance(mask_facts, bool):
        return {"mask_facts": gettext("Give true or false.")}
    if not isinstance(paths, list) or not all(isinstance(p, str) for p in paths):
        return {"mask_fact_paths": gettext("Give a list of fact paths, like customer_phone.")}
    for fact_path in paths:
        segments = fact_path.split(".")
        if not all(is_key(s) for s in segments):
            return {
                "mask_fact_paths": gettext("'%(path)s' is not a fact path (keys joined by dots).") % {"path": fact_path}
            }
        if facts is not None and segments[0] not in facts:
            return {"mask_fact_paths": gettext("'%(fact)s' is not a fact of this point.") % {"fact": segments[0]}}
        if len(segments) > 1 and facts is not None:
            # Declared facts are flat (strings, numbers, booleans, lists of strings): nothing lies below one.
            return {
                "mask_fact_paths": gettext("'%(path)s': a %(type)s fact has no parts; name the fact.")
                % {"path": fact_path, "type": facts[segments[0]]}
            }
    if len(set(paths)) != len(paths):
        return {"mask_fact_paths": gettext("Name each fact path once.")}
    if paths and not mask_facts:
        return {"mask_fact_paths": gettext("This point does not mask its facts: remove the paths or mask the facts.")}
    return {}


def session_mapping_problems(
    *, machine: str, state_map: Any, fallback_state: str, outcomes: list[str], machine_states: list[str] | None
) -> dict[str, str]:
    """What is wrong with a point's outcome → state map; ``machine_states`` is None if the machine is unknown."""
    problems: dict[str, str] = {}
    if not isinstance(state_map, dict) or not all(isinstance(v, str) for v in state_map.values()):
        return {"state_map": gettext("Give the map as outcome → state.")}
    if (state_map or fallback_state) and not machine:
        problems["machine"] = gettext("Name the state machine whose states the map and fallback refer to.")
        return problems
    if not machine:
        return problems
    if machine_states is None:
        problems["machine"] = gettext("There is no state machine '%(machine)s'.") % {"machine": machine}
        return problems
    stray = [o for o in state_map if o not in outcomes]
    if stray:
        problems["state_map"] = gettext("Not an outcome of this point: %(outcomes)s.") % {"outcomes": ", ".join(stray)}
    unknown = sorted({s for s in state_map.values() if s not in machine_states})
    if unknown:
        problems["state_map"] = gettext("Not a state of %(machine)s: %(states)s.") % {
            "machine": machine,
            "states": ", ".join(unknown),
        }
    if fallback_state and fallback_state not in machine_states:
        problems["fallback_state"] = gettext("'%(state)s' is not a state of %(machine)s.") % {
            "state": fallback_state,
            "machine": machine,
        }
    return problems


def point_problems(
    *,
    facts: Any,
    outcomes: Any,
    candidate_whitelist: Any,
    default_outcome: str,
    mask_skip: Any,
    mask_patterns: Any,
    machine: str,
    mask_fact_paths: Any,
    mask_facts: Any,
    state_map: Any,
    fallback_state: str,
    machine_states: list[str] | None,
) -> dict[str, str]:
    """Everything about one decision point that its own values decide (not what its rules rely on)."""
    problems: dict[str, str] = {}
    if not isinstance(facts, dict):
        problems["facts"] = gettext("Give the facts as a mapping of name to type.")
    else:
        for name, fact_type in facts.items():
            if problem := fact_name_problem(str(name)) or fact_type_problem(fact_type, subject=str(name)):
                problems["facts"] = problem
    if problem := key_list_problem(outcomes):
        return {**problems, "outcomes": problem}
    if not outcomes:
        problems["outcomes"] = gettext(NO_OUTCOMES)
    if problem := key_list_problem(candidate_whitelist):
        return {**problems, "candidate_whitelist": problem}
    if problem := outcomes_problem(candidate_whitelist, outcomes, gettext("this point")):
        problems["candidate_whitelist"] = problem
    if default_outcome and (problem := outcome_problem(default_outcome, outcomes, gettext("this point"))):
        problems["default_outcome"] = problem
    problems.update(masking_problems(mask_skip, mask_patterns))
    problems.update(fact_masking_problems(mask_fact_paths, mask_facts, facts if isinstance(facts, dict) else None))
    problems.update(
        session_mapping_problems(
            machine=machine,
            state_map=state_map,
            fallback_state=fallback_state,
            outcomes=outcomes,
            machine_states=machine_states,
        )
    )
    return problems


# --- rules ----------------------------------------------------------------------------------------


def rule_problems(
    *,
    outcome: str | None,
    outcomes: Collection[str] | None,
    point: str,
    effective_from: dt.datetime | None,
    effective_until: dt.datetime | None,
) -> dict[str, str]:
    """A rule's outcome is one of its point's; its effective period does not end before it starts.

    ``None`` for a value that is not known (not given, or already refused) skips the checks needing it.
    """
    problems: dict[str, str] = {}
    if outcome and outcomes is not None and (problem := outcome_problem(outcome, outcomes, point)):
        problems["outcome"] = problem
    if effective_from and effective_until and effective_from >= effective_until:
        problems["effective_until"] = gettext("The end of the effective period must come after its start.")
    return problems


# --- literals conditions compare facts with -------------------------------------------------------


def literal_fits(fact_type: str, item: Any) -> bool:
    """A literal a fact of ``fact_type`` can be compared with."""
    if fact_type in NUMERIC_FACT_TYPES:
        if isinstance(item, float):
            return math.isfinite(item)
        return isinstance(item, int) and not isinstance(item, bool)
    if fact_type == "boolean":
        return isinstance(item, bool)
    return isinstance(item, str)
