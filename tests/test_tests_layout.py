"""The tests' own layout: helpers come from ``tests.support``, fixtures from conftest files found by pytest;
no test module imports another test module or a conftest (a helper that two modules need moves to
``tests/support/``)."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def _imports_of_other_tests(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:  # a relative import reaches a sibling test module or a conftest
                found.append(f"{path.relative_to(TESTS)}:{node.lineno} from {'.' * node.level}{module}")
            elif module.startswith("tests.") and not (module == "tests.support" or module.startswith("tests.support.")):
                found.append(f"{path.relative_to(TESTS)}:{node.lineno} from {module}")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("tests.") and not alias.name.startswith("tests.support"):
                    found.append(f"{path.relative_to(TESTS)}:{node.lineno} import {alias.name}")
    return found


def test_no_test_module_imports_another_test_module_or_a_conftest():
    found = [hit for path in sorted(TESTS.rglob("*.py")) for hit in _imports_of_other_tests(path)]
    assert found == []


def test_the_support_package_imports_no_test_module():
    support = TESTS / "support"
    assert support.is_dir()
    for path in support.rglob("*.py"):
        assert not path.name.startswith("test_"), path
