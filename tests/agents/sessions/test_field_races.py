"""A session's fields written by racing requests, as real concurrent HTTP clients against a running server
(the set-up of ``test_concurrency``: pytest-django's threaded live server, a connection per request on
SQLite, clients released together by a barrier, several rounds on fresh sessions).

What must hold whatever the interleaving (``agents.sessions.field_updates``' invariants): a PATCH and a
move (with or without updates) on one session are ordered by the session's lock and the compare-and-set
on ``seq`` — no update is lost, and a move into a state that requires a field cannot be made on a value
a racing PATCH has just cleared (either the move is refused, or the PATCH loses its ``expected_state``
race): no session is ever in that state without the field. Two PATCHes from one ``expected_state`` both
land, one after the other, each on the values the other left.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest

from agents.runtimes.services import agent_create
from agents.sessions.models import Session, Transition
from rules.config.yaml_import import config_import
from tests.support.http import Agent, Answer, assert_gap_free
from tests.support.live_sqlite import connection_per_request

ROUNDS = 8

DOCUMENT = r"""
version: 1
thresholds: []
keyword_lists: []
points: []
machines:
  - key: address_race
    states: [collecting_params, executing, completed, human_handoff]
    initial: collecting_params
    handoff: human_handoff
    terminal: [completed]
    max_anomalies: 50
    transitions:
      collecting_params: [executing, human_handoff]
      executing: [completed, collecting_params, human_handoff]
      human_handoff: [completed]
    fields:
      - name: receiver_phone
        type: string
        pattern: '^1[3-9]\d{9}$'
        required_in: [executing]
        pii: true
      - name: new_address
        type: string
      - name: note
        type: string
"""

PHONE = "13800138000"


@pytest.fixture
def bot(live_server, transactional_db, tmp_path) -> Iterator[Agent]:
    with connection_per_request(live_server, tmp_path / "arbiter.sqlite3"):
        config_import(text=DOCUMENT, source="test", actor=None, reason="field races")
        _, token = agent_create(name="race_bot", point_keys=[], actor=None, reason="field races")
        yield Agent(live_server.url, token, "race_bot")


def at_once(*requests: Callable[[], Answer]) -> list[Answer]:
    barrier = threading.Barrier(len(requests), timeout=30)

    def one(request: Callable[[], Answer]) -> Answer:
        barrier.wait()
        return request()

    with ThreadPoolExecutor(max_workers=len(requests)) as pool:
        answers = list(pool.map(one, requests))
    for answer in answers:
        assert answer.status < 500, answer  # a race is never a server error
    return answers


def patch(bot: Agent, key: str, updates: dict, expected: str = "collecting_params") -> Callable[[], Answer]:
    return lambda: bot.call("PATCH", f"/api/v1/sessions/{key}/fields", {"expected_state": expected, "updates": updates})


def move(bot: Agent, key: str, **extra) -> Callable[[], Answer]:
    return lambda: bot.move(key, "executing", "collecting_params", **extra)


def start_with_phone(bot: Agent, key: str) -> None:
    assert bot.start("address_race", key).status == 201
    assert patch(bot, key, {"receiver_phone": PHONE})().status == 200


def outcome(*answers: Answer) -> tuple[tuple[int, str | None], ...]:
    return tuple((a.status, a.code) for a in answers)


@pytest.mark.parametrize("updates", [None, {"note": "move"}], ids=["move", "move_with_updates"])
def test_a_patch_clearing_a_required_field_never_lets_a_move_in_without_it(bot, updates):
    seen = set()
    for round_ in range(ROUNDS):
        key = f"clear-{round_}"
        start_with_phone(bot, key)
        extra = {} if updates is None else {"updates": updates}
        cleared, moved = at_once(patch(bot, key, {"receiver_phone": None}), move(bot, key, **extra))
        seen.add(outcome(cleared, moved))
        session = Session.objects.get(key=key)
        rows = assert_gap_free(key)
        if moved.status == 200:
            # The move came first: the session is in executing with the phone, and the PATCH, still
            # believing it in collecting_params, lost its expected_state race.
            assert (cleared.status, cleared.code) == (409, "state_mismatch"), cleared
            assert session.state == "executing" and session.field_values["receiver_phone"] == PHONE
            assert [r.kind for r in rows] == ["fields", "move"]
        else:
            # The PATCH came first: the move saw the phone gone and was refused, nothing of it written.
            assert (moved.status, moved.code, moved.body["missing"]) == (422, "fields_missing", ["receiver_phone"])
            assert cleared.status == 200, cleared
            assert session.state == "collecting_params" and "receiver_phone" not in session.field_values
            assert [r.kind for r in rows] == ["fields", "fields"]
            assert "note" not in session.field_values
        if updates is not None and session.state == "executing":
            assert session.field_values == {"receiver_phone": PHONE, "note": "move"}
    assert seen <= {((409, "state_mismatch"), (200, None)), ((200, None), (422, "fields_missing"))}, seen


def test_a_patch_and_a_move_with_updates_lose_neither_update(bot):
    for round_ in range(ROUNDS):
        key = f"both-{round_}"
        start_with_phone(bot, key)
        patched, moved = at_once(patch(bot, key, {"new_address": "杭州市"}), move(bot, key, updates={"note": "m"}))
        session = Session.objects.get(key=key)
        rows = assert_gap_free(key)
        assert moved.status == 200, moved  # whichever came first, the move's own checks hold
        if patched.status == 200:  # the PATCH first: the move was made on the values it left
            assert [r.kind for r in rows] == ["fields", "fields", "move"]
            assert session.field_values == {"receiver_phone": PHONE, "new_address": "杭州市", "note": "m"}
            assert moved.body["session"]["fields"] == session.field_values
        else:
            assert (patched.status, patched.code) == (409, "state_mismatch"), patched
            assert [r.kind for r in rows] == ["fields", "move"]
            assert session.field_values == {"receiver_phone": PHONE, "note": "m"}
        assert (session.state, session.seq) == ("executing", len(rows))


@pytest.mark.parametrize("same_field", [False, True], ids=["two_fields", "one_field"])
def test_two_patches_from_one_expected_state_both_land_in_order(bot, same_field):
    for round_ in range(ROUNDS):
        key = f"patches-{same_field}-{round_}"
        assert bot.start("address_race", key).status == 201
        second = {"new_address": "上海市"} if same_field else {"note": "n"}
        first, other = at_once(patch(bot, key, {"new_address": "杭州市"}), patch(bot, key, second))
        assert (first.status, other.status) == (200, 200), (first, other)  # the lock orders them: no refusal
        session = Session.objects.get(key=key)
        rows = assert_gap_free(key)
        assert [r.kind for r in rows] == ["fields", "fields"] and session.seq == 2
        earlier, later = sorted([first, other], key=lambda a: a.body["session"]["seq"])
        assert (earlier.body["session"]["seq"], later.body["session"]["seq"]) == (1, 2)
        # The later write was made on what the earlier left (no lost update): its answer is what is stored.
        assert later.body["fields"] == session.field_values
        if same_field:
            assert session.field_values == {"new_address": later.body["fields"]["new_address"]}
        else:
            assert session.field_values == {"new_address": "杭州市", "note": "n"}
        sent = {id(first): {"new_address": "杭州市"}, id(other): second}
        assert [r.fields_changed for r in rows] == [sent[id(earlier)], sent[id(later)]]
    assert Transition.objects.filter(session__key__startswith="patches-").count() == 2 * ROUNDS
