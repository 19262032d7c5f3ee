"""Parse YAML into plain data while remembering where every value came from.

``yaml.safe_load`` forgets positions and lets a repeated mapping key silently replace the first one.
Here the node graph is composed with PyYAML's ``SafeLoader`` and the data is built from the nodes by
hand, so that every problem can name its path and line, and a repeated key is reported, not lost.
Pure Python, no Django.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from rules.config.validators import storable_problem

Path = tuple[str | int, ...]

_MAP_TAG = "tag:yaml.org,2002:map"
_SEQ_TAG = "tag:yaml.org,2002:seq"
_MERGE_TAG = "tag:yaml.org,2002:merge"
_PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

# Aliases are expanded into copies; this bounds what a small file with nested aliases can expand to.
MAX_VALUES = 200_000
# The configuration nests about eight levels deep; PyYAML composes nodes recursively, so a document
# nested thousands of levels deep would otherwise end in a RecursionError.
MAX_DEPTH = 64
# Nothing in a configuration needs a longer number; str() of an integer past 4,300 digits raises.
MAX_NUMBER_DIGITS = 100
_MAX_NUMBER = 10**MAX_NUMBER_DIGITS
_TOO_LONG = f"a number of more than {MAX_NUMBER_DIGITS} digits (quote it if it is meant as text)"
_INT_TAG = "tag:yaml.org,2002:int"
_KINDS = {_INT_TAG: "a whole number", "tag:yaml.org,2002:float": "a number", "tag:yaml.org,2002:timestamp": "a date"}


def format_path(path: Path) -> str:
    """``('points', 0, 'rules', 2, 'outcome')`` → ``points[0].rules[2].outcome``."""
    if not path:
        return "document"
    text = ""
    for part in path:
        if isinstance(part, int):
            text += f"[{part}]"
        elif _PLAIN_KEY.fullmatch(part):
            text += f".{part}" if text else part
        else:
            text += f"[{part!r}]"
    return text


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a document, at a path and a (1-based) line."""

    path: Path
    line: int
    message: str

    def __str__(self) -> str:
        return f"{format_path(self.path)}: {self.message} (line {self.line})"


@dataclass
class LoadedYaml:
    """The data of a YAML document plus, per path, the line it starts on and its text as written.

    ``raw`` holds the source text of plain (unquoted) scalars that YAML turned into something other
    than a string — ``12315``, ``18:00`` (a base-60 integer in YAML 1.1), ``yes`` — so that a field
    expecting text can take what the author typed rather than what YAML guessed.
    """

    data: Any = None
    parsed: bool = False
    lines: dict[Path, int] = field(default_factory=dict)
    raw: dict[Path, str] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)

    def line_of(self, path: Path) -> int:
        """The line of ``path``, or of its nearest ancestor that has one."""
        while path not in self.lines and path:
            path = path[:-1]
        return self.lines.get(path, 1)

    def problem(self, path: Path, message: str) -> None:
        self.problems.append(Problem(path, self.line_of(path), message))


class _TooDeep(Exception):
    def __init__(self, line: int) -> None:
        super().__init__(line)
        self.line = line


class _DepthLimitedLoader(yaml.SafeLoader):
    """Stops composing at ``MAX_DEPTH`` levels, where the composer would otherwise recurse on."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self.depth = 0

    def compose_node(self, parent: Node | None, index: Any) -> Node | None:
        self.depth += 1
        try:
            if self.depth > MAX_DEPTH:
                raise _TooDeep(self.peek_event().start_mark.line + 1)
            return super().compose_node(parent, index)
        finally:
            self.depth -= 1


def load_yaml(text: str) -> LoadedYaml:
    """Parse one YAML document. Syntax errors and repeated keys end up in ``problems``, never raised,
    and so do documents that nest deeper than ``MAX_DEPTH``, expand past ``MAX_VALUES`` or hold
    numbers longer than ``MAX_NUMBER_DIGITS``."""
    loaded = LoadedYaml()
    try:
        # PyYAML checks a text's characters as the loader is made, before anything is parsed.
        loader = _DepthLimitedLoader(text)
    except yaml.reader.ReaderError as exc:
        loaded.problems.append(_reader_problem(text, exc))
        return loaded
    try:
        node = loader.get_single_node()
        if node is None:
            loaded.problem((), "the file is empty")
            return loaded
        loaded.lines[()] = node.start_mark.line + 1
        loaded.data = _Builder(loader, loaded).build(node, ())
        loaded.parsed = True
    except yaml.MarkedYAMLError as exc:
        loaded.data = None
        loaded.problems.append(Problem((), *_syntax_problem(exc)))
    except yaml.reader.ReaderError as exc:
        loaded.data = None
        loaded.problems.append(_reader_problem(text, exc))
    except _TooLarge:
        loaded.data = None
        loaded.problems.append(Problem((), 1, f"the document expands to more than {MAX_VALUES} values"))
    except _TooDeep as exc:
        loaded.data = None
        loaded.problems.append(Problem((), exc.line, f"the document nests deeper than {MAX_DEPTH} levels"))
    finally:
        loader.dispose()
    return loaded


def _reader_problem(text: str, exc: yaml.reader.ReaderError) -> Problem:
    """A character YAML does not allow (a control character such as U+0007, U+0010, U+0016), with
    where it is: one line, not PyYAML's message with its multi-line position."""
    position = min(max(exc.position, 0), len(text))
    line = text.count("\n", 0, position) + 1
    column = position - (text.rfind("\n", 0, position) + 1) + 1
    code = exc.character if isinstance(exc.character, int) else ord(str(exc.character)[:1] or "\0")
    escape = f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"
    return Problem(
        (),
        line,
        f"invalid YAML: the character U+{code:04X} (column {column}) is not allowed in a YAML file, nor are "
        f"other control characters but tab and line breaks: remove it, or write it as {escape} in a "
        "double-quoted string",
    )


def _syntax_problem(exc: yaml.MarkedYAMLError) -> tuple[int, str]:
    mark = exc.problem_mark or exc.context_mark
    line = mark.line + 1 if mark is not None else 1
    message = f"invalid YAML: {exc.problem or exc.context or 'cannot parse'}"
    if exc.context and exc.problem and exc.context_mark is not None:
        message += f" ({exc.context} that starts on line {exc.context_mark.line + 1})"
    return line, message


class _TooLarge(Exception):
    pass


def _shortened(text: str, limit: int = 40) -> str:
    return repr(text if len(text) <= limit else text[:limit] + "…")


class _Builder:
    def __init__(self, loader: yaml.SafeLoader, loaded: LoadedYaml) -> None:
        self.loader = loader
        self.loaded = loaded
        self.active: set[int] = set()  # nodes being built, to stop on an alias that contains itself
        self.count = 0

    def build(self, node: Node, path: Path) -> Any:
        self.count += 1
        if self.count > MAX_VALUES:
            raise _TooLarge
        if isinstance(node, ScalarNode):
            return self._scalar(node, path)
        if id(node) in self.active:
            self.loaded.problem(path, "an alias refers to the value that contains it")
            return None
        self.active.add(id(node))
        try:
            if isinstance(node, SequenceNode):
                return self._sequence(node, path)
            if isinstance(node, MappingNode):
                return self._mapping(node, path)
        finally:
            self.active.discard(id(node))
        self.loaded.problem(path, "unsupported YAML node")
        return None

    def _scalar(self, node: ScalarNode, path: Path) -> Any:
        if node.tag == _INT_TAG and sum(c.isdigit() for c in node.value) > MAX_NUMBER_DIGITS:
            self.loaded.problem(path, _TOO_LONG)
            return None
        try:
            value = self.loader.construct_object(node, deep=True)
        except yaml.constructor.ConstructorError as exc:
            self.loaded.problem(path, f"invalid YAML value: {exc.problem}")
            return None
        except (ValueError, OverflowError, TypeError, AttributeError) as exc:
            # What the resolver or an explicit tag made a number or a date but PyYAML's constructor
            # cannot build: 2025-13-45 (ValueError), !!int abc, !!timestamp x (AttributeError).
            kind = _KINDS.get(node.tag, "a value")
            self.loaded.problem(path, f"invalid YAML value: {_shortened(node.value)} is not {kind} ({exc})")
            return None
        if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= _MAX_NUMBER:
            self.loaded.problem(path, _TOO_LONG)
            return None
        if node.style is None and not isinstance(value, str):
            self.loaded.raw[path] = node.value
        return value

    def _sequence(self, node: SequenceNode, path: Path) -> list[Any] | None:
        if node.tag != _SEQ_TAG:
            self.loaded.problem(path, f"unsupported YAML tag {node.tag}")
            return None
        items = []
        for index, child in enumerate(node.value):
            child_path = (*path, index)
            self.loaded.lines[child_path] = child.start_mark.line + 1
            items.append(self.build(child, child_path))
        return items

    def _mapping(self, node: MappingNode, path: Path) -> dict[str, Any] | None:
        if node.tag != _MAP_TAG:
            self.loaded.problem(path, f"unsupported YAML tag {node.tag}")
            return None
        result: dict[str, Any] = {}
        first_line: dict[str, int] = {}
        for key_node, value_node in node.value:
            key_line = key_node.start_mark.line + 1
            if not isinstance(key_node, ScalarNode):
                self.loaded.problems.append(Problem(path, key_line, "a mapping key must be plain text"))
                continue
            if key_node.tag == _MERGE_TAG:
                self.loaded.problems.append(
                    Problem(path, key_line, "merge keys (<<) are not supported; repeat the keys instead")
                )
                continue
            # Keys are names here; take them as written, so a state called ``on`` is not the boolean true.
            key = key_node.value
            if problem := storable_problem(key):
                clause = problem[0].lower() + problem[1:].rstrip(".")
                self.loaded.problems.append(Problem(path, key_line, f"a mapping key: {clause}"))
                continue
            child_path = (*path, key)
            if key in first_line:
                self.loaded.problems.append(
                    Problem(child_path, key_line, f"duplicate key '{key}' (first given on line {first_line[key]})")
                )
                continue
            first_line[key] = key_line
            self.loaded.lines[child_path] = key_line
            result[key] = self.build(value_node, child_path)
        return result
