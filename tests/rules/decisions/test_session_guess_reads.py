"""A decide may evaluate on a guessed session (its state as last seen) only for a point whose rules read
no more of a session than the guess holds: a kind of condition reading anything else turns it off."""

from __future__ import annotations

from types import SimpleNamespace

from rules.decisions.compute import GUESSABLE, SESSION_READS, SessionSeen, point_session_reads, session_guess_allowed
from rules.engine.conditions import KINDS


def _point(*kinds: str) -> SimpleNamespace:
    rule = SimpleNamespace(conditions=tuple(SimpleNamespace(kind=k) for k in kinds))
    return SimpleNamespace(spec=SimpleNamespace(rules=(rule,)))


def test_every_kind_of_condition_says_what_it_reads_of_a_session():
    # A new kind must be classified here before a point using it may be decided on a guess.
    assert set(KINDS) == set(SESSION_READS)


def test_the_guess_holds_the_state_and_nothing_else():
    assert {"state"} == GUESSABLE
    assert SessionSeen(state="init").state == "init"


def test_a_point_reading_only_the_state_may_be_decided_on_a_guess():
    point = _point("input_contains", "session_state_in")
    assert point_session_reads(point) == {"state"}
    assert session_guess_allowed(point)


def test_a_kind_whose_reads_are_unknown_turns_the_guess_off():
    point = _point("input_contains", "session_field_equals")
    assert point_session_reads(point) is None
    assert not session_guess_allowed(point)
