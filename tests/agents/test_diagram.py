"""The state machine picture: a pure function from a definition to SVG. No database."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest
from django.utils import translation

from rules.config.machine_diagram import machine_svg

SVG = "{http://www.w3.org/2000/svg}"

AFTER_SALES = {
    "states": ["init", "intent_clarify", "received", "refund_review", "human_handoff", "closed", "escalated"],
    "initial_state": "init",
    "handoff_state": "human_handoff",
    "terminal_states": ["closed"],
    "transitions": {
        "init": ["intent_clarify", "received", "human_handoff"],
        "intent_clarify": ["received", "human_handoff"],
        "received": ["refund_review", "human_handoff", "closed"],
        "refund_review": ["closed", "human_handoff", "escalated"],
        "human_handoff": ["closed", "escalated"],
        "escalated": ["closed"],
    },
}


def groups(root: ET.Element, css: str) -> list[ET.Element]:
    return [g for g in root.iter(f"{SVG}g") if css in (g.get("class") or "").split()]


def draw(**definition) -> ET.Element:
    return ET.fromstring(machine_svg(**definition))  # noqa: S314 - our own output, not untrusted input


def test_one_box_per_state_and_one_arrow_per_move():
    root = draw(**AFTER_SALES, title="after_sales")
    assert root.tag == f"{SVG}svg"
    states = groups(root, "state")
    assert [g.get("data-state") for g in states] and sorted(g.get("data-state") for g in states) == sorted(
        AFTER_SALES["states"]
    )
    moves = {(g.get("data-from"), g.get("data-to")) for g in groups(root, "edge")}
    expected = {(a, b) for a, targets in AFTER_SALES["transitions"].items() for b in targets}
    assert len(groups(root, "edge")) == len(expected)
    assert moves == expected
    kinds = {g.get("data-state"): set(g.get("class").split()) - {"state"} for g in states}
    assert kinds["init"] == {"initial"}
    assert kinds["human_handoff"] == {"handoff"}
    assert kinds["closed"] == {"terminal"}
    assert kinds["received"] == set()
    # The initial state has the start dot; every box lies inside the picture.
    assert len(list(root.iter(f"{SVG}circle"))) == 1
    width, height = float(root.get("width")), float(root.get("height"))
    for g in states:
        rect = g.find(f"{SVG}rect")
        x, y = float(rect.get("x")), float(rect.get("y"))
        assert x >= 0 and x + float(rect.get("width")) <= width
        assert y >= 0 and y + float(rect.get("height")) <= height


def test_moves_go_down_except_the_ones_back_into_a_loop():
    root = draw(
        states=["a", "b", "c", "done"],
        initial_state="a",
        handoff_state="c",
        terminal_states=["done"],
        transitions={"a": ["b"], "b": ["c", "a", "b"], "c": ["done"]},
    )
    y = {g.get("data-state"): float(g.find(f"{SVG}rect").get("y")) for g in groups(root, "state")}
    assert y["a"] < y["b"] < y["c"] < y["done"]
    back = {(g.get("data-from"), g.get("data-to")) for g in groups(root, "back")}
    assert back == {("b", "a")}
    loops = {(g.get("data-from"), g.get("data-to")) for g in groups(root, "loop")}
    assert loops == {("b", "b")}
    assert len(groups(root, "edge")) == 5


def test_labels_are_escaped():
    nasty = "a<b&c\"'>"
    svg = machine_svg(
        states=["start", nasty],
        initial_state="start",
        handoff_state=nasty,
        terminal_states=[],
        transitions={"start": [nasty]},
        title="<script>alert(1)</script>",
    )
    assert "<script>" not in svg and "a<b" not in svg
    root = ET.fromstring(svg)  # noqa: S314 - our own output, not untrusted input
    texts = [t.text for t in root.iter(f"{SVG}text")]
    assert nasty in texts
    assert root.find(f"{SVG}title").text == "<script>alert(1)</script>"
    assert {g.get("data-state") for g in groups(root, "state")} == {"start", nasty}
    assert [(g.get("data-from"), g.get("data-to")) for g in groups(root, "edge")] == [("start", nasty)]


def test_unreachable_states_are_marked():
    root = draw(
        states=["start", "end", "limbo"],
        initial_state="start",
        handoff_state="start",
        terminal_states=["end"],
        transitions={"start": ["end"]},
    )
    unreachable = [g.get("data-state") for g in groups(root, "unreachable")]
    assert unreachable == ["limbo"]


@pytest.mark.parametrize(
    "definition",
    [
        {"states": [], "initial_state": "", "handoff_state": "", "terminal_states": [], "transitions": {}},
        {"states": "not a list", "initial_state": None, "handoff_state": 3, "terminal_states": "x", "transitions": []},
        {
            "states": ["a", "a", 7, "b"],
            "initial_state": "nowhere",
            "handoff_state": "b",
            "terminal_states": ["b"],
            "transitions": {"a": ["b", "ghost"], "ghost": ["a"], "b": "a"},
        },
    ],
)
def test_an_invalid_definition_still_draws_what_it_can(definition):
    root = draw(**definition)
    states = sorted(g.get("data-state") for g in groups(root, "state"))
    declared = (
        sorted({s for s in definition["states"] if isinstance(s, str)})
        if isinstance(definition["states"], list)
        else []
    )
    assert states == declared
    for g in groups(root, "edge"):
        assert g.get("data-from") in declared and g.get("data-to") in declared


def test_a_larger_machine_keeps_boxes_apart():
    states = [f"s{i}" for i in range(30)]
    transitions = {s: [states[(i + 1) % 30], states[(i * 7) % 30]] for i, s in enumerate(states)}
    root = draw(states=states, initial_state="s0", handoff_state="s29", terminal_states=[], transitions=transitions)
    boxes = []
    for g in groups(root, "state"):
        r = g.find(f"{SVG}rect")
        boxes.append((float(r.get("x")), float(r.get("y")), float(r.get("width")), float(r.get("height"))))
    assert len(boxes) == 30
    for i, (x1, y1, w1, h1) in enumerate(boxes):
        for x2, y2, w2, h2 in boxes[i + 1 :]:
            assert x1 + w1 <= x2 or x2 + w2 <= x1 or y1 + h1 <= y2 or y2 + h2 <= y1


# --- fields and events on the picture ---------------------------------------------------------------------

ADDRESS = {
    "states": ["collecting", "clarify", "executing", "handoff", "done"],
    "initial_state": "collecting",
    "handoff_state": "handoff",
    "terminal_states": ["done"],
    "transitions": {
        "collecting": ["executing", "clarify", "handoff", "collecting"],
        "clarify": ["executing", "handoff"],
        "executing": ["done", "handoff"],
    },
    "fields": [
        {"name": "receiver_phone", "type": "string", "required_in": ["executing"], "pii": True},
        {"name": "new_address", "type": "string", "required_in": ["executing", "ghost"]},
        {"name": "note", "type": "string"},
    ],
    "events": [
        {"name": "confirm", "from": ["collecting", "clarify"], "to": "executing"},
        {"name": "retry", "from": ["collecting"], "to": "collecting"},
        {"name": "not_a_move", "from": ["executing"], "to": "collecting"},
        {"name": "escalate", "from": ["collecting"], "to": "handoff", "guard": {"requires_fields": ["note"]}},
    ],
    "guards": {
        "clarify": {"executing": {"requires_fields": ["new_address"]}},
        "collecting": {"clarify": {"requires_decision": {"point": "intent_routing", "outcomes": ["unclear"]}}},
    },
}


@pytest.fixture(autouse=True)
def english():
    """The marks' words are gettext's: in English here, whatever an earlier test left active."""
    with translation.override("en"):
        yield


def text_of(g: ET.Element, css: str) -> str | None:
    found = [t.text for t in g.iter(f"{SVG}text") if css in (t.get("class") or "").split()]
    return found[0] if found else None


def test_a_state_names_the_fields_required_to_enter_it():
    root = draw(**ADDRESS)
    states = {g.get("data-state"): g for g in groups(root, "state")}
    assert {s for s, g in states.items() if "needs" in g.get("class").split()} == {"executing"}
    assert text_of(states["executing"], "needs") == "needs receiver_phone, new_address"
    assert "Fields required to enter: receiver_phone, new_address" in states["executing"].find(f"{SVG}title").text
    # Every box grows by the same line, so the rows stay even; the name stays inside its box.
    heights = {float(g.find(f"{SVG}rect").get("height")) for g in states.values()}
    assert len(heights) == 1


def test_moves_carry_their_events_and_guards():
    root = draw(**ADDRESS)
    edges = {(g.get("data-from"), g.get("data-to")): g for g in groups(root, "edge")}
    labelled = {edge for edge, g in edges.items() if "labelled" in g.get("class").split()}
    # not_a_move names no allowed move: left out (validation refuses it; the picture draws what it can).
    assert labelled == {
        ("collecting", "executing"),
        ("clarify", "executing"),
        ("collecting", "collecting"),
        ("collecting", "handoff"),
        ("collecting", "clarify"),
    }
    assert text_of(edges[("collecting", "executing")], "edge-label") == "confirm"
    assert text_of(edges[("clarify", "executing")], "edge-label") == "confirm [fields new_address]"
    assert text_of(edges[("collecting", "collecting")], "edge-label") == "retry"
    assert text_of(edges[("collecting", "clarify")], "edge-label") == "[decision intent_routing: unclear]"
    escalate = edges[("collecting", "handoff")]
    assert text_of(escalate, "edge-label") == "escalate"
    assert escalate.find(f"{SVG}title").text == "collecting → handoff\nevent escalate (fields note)"
    assert "labelled" not in edges[("executing", "done")].get("class").split()
    # Labels stay inside the picture.
    width = float(root.get("width"))
    for t in root.iter(f"{SVG}text"):
        if t.get("class") == "edge-label" and t.get("text-anchor") == "middle":
            assert 0 <= float(t.get("x")) <= width


def test_a_machine_without_fields_or_events_is_drawn_as_before():
    plain = {k: v for k, v in ADDRESS.items() if k not in ("fields", "events", "guards")}
    assert machine_svg(**plain) == machine_svg(**plain, fields=[], events=[], guards={})
    root = draw(**plain)
    assert not [t for t in root.iter(f"{SVG}text") if t.get("class") in ("needs", "edge-label")]


def test_long_lists_are_cut_short_on_the_picture_and_whole_in_the_tooltip():
    fields = [{"name": f"field_{i}", "type": "string", "required_in": ["executing"]} for i in range(5)]
    events = [{"name": f"event_number_{i}", "from": ["collecting"], "to": "executing"} for i in range(4)]
    root = draw(**{**ADDRESS, "fields": fields, "events": events, "guards": {}})
    executing = next(g for g in groups(root, "state") if g.get("data-state") == "executing")
    assert text_of(executing, "needs") == "needs field_0, field_1, field_2 +2"
    assert "field_4" in executing.find(f"{SVG}title").text
    edge = next(
        g for g in groups(root, "edge") if (g.get("data-from"), g.get("data-to")) == ("collecting", "executing")
    )
    label = text_of(edge, "edge-label")
    assert len(label) == 40 and label.endswith("…")
    assert "event event_number_3" in edge.find(f"{SVG}title").text


@pytest.mark.parametrize(
    "marks",
    [
        {"fields": "nope", "events": {"a": 1}, "guards": ["x"]},
        {"fields": [{"required_in": ["executing"]}, 3], "events": [{"from": "collecting"}, None], "guards": {"a": 1}},
        {"fields": [{"name": "x", "required_in": "executing"}], "events": [{"name": "e", "from": ["collecting"]}]},
    ],
)
def test_malformed_fields_and_events_are_left_out(marks):
    root = draw(**{**{k: v for k, v in ADDRESS.items() if k not in ("fields", "events", "guards")}, **marks})
    assert not [t for t in root.iter(f"{SVG}text") if t.get("class") in ("needs", "edge-label")]


def test_field_and_event_labels_are_escaped():
    nasty = "<script>alert(1)</script>"
    svg = machine_svg(
        **{k: v for k, v in ADDRESS.items() if k not in ("fields", "events", "guards")},
        fields=[{"name": nasty, "required_in": ["executing"]}],
        events=[{"name": nasty, "from": ["collecting"], "to": "executing"}],
        guards={"clarify": {"executing": {"requires_decision": {"point": nasty, "outcomes": [nasty]}}}},
    )
    assert "<script>" not in svg
    root = ET.fromstring(svg)  # noqa: S314 - our own output, not untrusted input
    labels = [t.text for t in root.iter(f"{SVG}text") if t.get("class") in ("needs", "edge-label")]
    assert any(nasty in (text or "") for text in labels)
