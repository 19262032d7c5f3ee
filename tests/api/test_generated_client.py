"""A client generated from ``docs/openapi.yaml`` keeps every schema and response, and works.

openapi-python-client is the most used Python generator. It drops, with a warning, any schema it
cannot read — and with it every response that refers to it: a ``Problem`` it cannot read leaves a
client that cannot tell ``state_mismatch`` from any other refusal. So the client is generated here,
with the settings ``docs/api.md`` tells client developers to use, and the test fails on any warning,
on any schema without its model, on any documented response the generated code does not parse; then
the generated client talks to the running server and reads a refusal's code and extension members.
"""

from __future__ import annotations

import importlib
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support import SPEC

CONFIG = SPEC.parent / "openapi-python-client.yaml"
PACKAGE = "arbiter_generated_client"
GENERATOR = Path(sys.executable).with_name("openapi-python-client")
HTTP_METHODS = ("get", "post", "put", "patch", "delete")


@pytest.fixture(scope="module")
def spec() -> dict[str, Any]:
    return yaml.safe_load(SPEC.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def generated(tmp_path_factory) -> tuple[Path, str]:
    """The generated package's folder and everything the generator printed."""
    root = tmp_path_factory.mktemp("client")
    out = root / PACKAGE
    command = [str(GENERATOR), "generate", "--path", str(SPEC), "--config", str(CONFIG), "--meta", "none"]
    run = subprocess.run(
        [*command, "--output-path", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    printed = run.stdout + run.stderr
    assert run.returncode == 0, printed
    return out, printed


def test_the_generator_warns_about_nothing(generated):
    _, printed = generated
    # All it should say is where it wrote the client; every warning is something a client lost.
    lines = [line for line in printed.splitlines() if line.strip()]
    assert [line for line in lines if not line.startswith("Generating ")] == [], printed


def _model_names(out: Path) -> set[str]:
    source = (out / "models" / "__init__.py").read_text(encoding="utf-8")
    return set(re.findall(r"^from \.\w+ import (\w+)$", source, re.MULTILINE))


def test_every_object_and_enum_schema_has_its_model(spec, generated):
    out, _ = generated
    models = _model_names(out)
    wanted = {
        name
        for name, schema in spec["components"]["schemas"].items()
        if "properties" in schema or "enum" in schema or "allOf" in schema
    }
    assert {"Problem", "TransitionProblem", "ProblemCode"} <= wanted
    assert wanted - models == set()


def _operations(spec: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    return [(op["operationId"], op) for ops in spec["paths"].values() for m, op in ops.items() if m in HTTP_METHODS]


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def test_every_documented_response_is_parsed_by_the_generated_code(spec, generated):
    out, _ = generated
    for operation_id, operation in _operations(spec):
        tag = _snake(operation["tags"][0])  # the generator names modules in snake case
        source = (out / "api" / tag / f"{_snake(operation_id)}.py").read_text(encoding="utf-8")
        parsed = set(re.findall(r"response\.status_code == (\d+)", source))
        if "response_default" in source:
            parsed.add("default")
        assert set(operation["responses"]) == parsed, operation_id
        # Every refusal an operation may send is read as a Problem, not left as raw bytes.
        for status in operation["responses"]:
            if status.startswith(("4", "5")) or status == "default":
                name = "default" if status == "default" else status
                assert re.search(rf"response_{name} = (Transition)?Problem\.from_dict", source), (operation_id, status)


# --- The generated client against the running server --------------------------------------------------


@pytest.fixture
def client_package(generated, monkeypatch):
    out, _ = generated
    monkeypatch.syspath_prepend(str(out.parent))
    for name in [m for m in sys.modules if m == PACKAGE or m.startswith(PACKAGE + ".")]:
        monkeypatch.delitem(sys.modules, name)
    return importlib.import_module(PACKAGE)


def test_a_generated_client_reads_state_mismatch_and_field_errors(client_package, live_demo, live_token):
    api = importlib.import_module(f"{PACKAGE}.api.sessions")
    session_create = importlib.import_module(f"{PACKAGE}.api.sessions.session_create")
    session_transition = importlib.import_module(f"{PACKAGE}.api.sessions.session_transition")
    decision_create = importlib.import_module(f"{PACKAGE}.api.decisions.decision_create")
    models = importlib.import_module(f"{PACKAGE}.models")
    assert api is not None
    client = client_package.AuthenticatedClient(base_url=live_demo.url, token=live_token)

    created = session_create.sync(
        client=client, body=models.SessionCreateRequest(machine="after_sales", session_id="s1")
    )
    assert isinstance(created, models.SessionCreated) and created.state == "init"

    moved = session_transition.sync(
        "s1", client=client, body=models.TransitionRequest(to="received", expected_state="init")
    )
    assert isinstance(moved, models.Move) and moved.seq == 1

    stale = session_transition.sync(
        "s1", client=client, body=models.TransitionRequest(to="received", expected_state="init")
    )
    assert isinstance(stale, models.Problem)
    assert stale.code == models.ProblemCode.STATE_MISMATCH
    assert (stale.state, stale.seq, stale.status) == ("received", 1, 409)

    refused = decision_create.sync_detailed(
        client=client,
        body=models.DecideRequest(
            point="refund_approval", facts=models.DecideRequestFacts.from_dict({"refund_amount": "800"})
        ),
    )
    assert refused.status_code == 422
    problem = refused.parsed
    assert isinstance(problem, models.Problem) and problem.code == models.ProblemCode.INVALID_REQUEST
    assert "facts" in problem.errors.additional_properties
