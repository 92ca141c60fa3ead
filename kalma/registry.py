"""One registry for every pluggable component: model backends, KG sources, metrics.

A component is named by a spec string, `name[:argument][,option=value...]` (a component that
takes no argument also reads `name:option=value,...`, e.g. `conner:agg=mean,l=3`):
`openai:gpt-4o-mini,timeout=30`, `hf:google/t5_xxl_true_nli_mixture,dtype=bf16`,
`sparql:http://localhost:7878/query,attempts=3`. Entries are `module:attribute` strings, loaded
only when used, so listing or parsing never imports a heavy library. Other packages add
components through entry points (groups `kalma.llms`, `kalma.entailment`, `kalma.scorers`,
`kalma.matchers`, `kalma.kg`, `kalma.metrics`), with no change to kalma. Options are checked
against the factory's own typed keyword parameters, so a misspelt or ill-typed option is an
error naming it. In a TOML file a component may also be a table, `{name = "conner", agg =
"mean", l = 3}` (`argument = "…"` for the argument), which `spec_of` writes as the one spec
string every output records.

>>> r = Registry("widget", "kalma.widgets")
>>> r.add("fraction", "fractions:Fraction", argument="required")
>>> r.build("fraction:3/4")
Fraction(3, 4)
>>> r.build("fractoin:1")
Traceback (most recent call last):
...
kalma.errors.ConfigError: unknown widget 'fractoin'; known: fraction:…. Did you mean 'fraction'?
"""

from __future__ import annotations

import difflib
import functools
import importlib
import inspect
import re
import sys
import typing
from collections.abc import Callable
from dataclasses import dataclass
from importlib.metadata import EntryPoint, entry_points
from typing import Any, Generic, Literal, TypeVar

from .errors import ConfigError

T = TypeVar("T")
_OPTIONS = re.compile(r"^(.*?)((?:,[A-Za-z_][\w-]*=[^,]*)*)$", re.DOTALL)


@dataclass(frozen=True)
class Entry:
    target: str  # "module:attribute": a class or a factory function
    argument: Literal["required", "optional", "none"] = "required"
    raw: bool = False  # the argument is itself a spec (e.g. `llm:SPEC`): its options are not parsed here


def parse_spec(spec: str, raw: bool = False) -> tuple[str, str, dict[str, str]]:
    """(name, argument, options) of `name[:argument][,key=value...]`.

    >>> parse_spec("openai-compatible:http://h:8000/v1:llama3:8b,concurrency=4,timeout=30")
    ('openai-compatible', 'http://h:8000/v1:llama3:8b', {'concurrency': '4', 'timeout': '30'})
    """
    name, _, rest = spec.partition(":")
    if raw:
        return name, rest, {}
    head, tail = _OPTIONS.match(spec).groups()  # type: ignore[union-attr]  # the pattern always matches
    name, _, argument = head.partition(":")
    options = dict(kv.split("=", 1) for kv in tail.split(",") if kv)
    return name, argument, options


def suggest(name: str, known: list[str]) -> str:
    close = difflib.get_close_matches(name, known, n=1)
    return f" Did you mean {close[0]!r}?" if close else ""


@functools.lru_cache(maxsize=64)
def _declared(group: str, path: tuple[str, ...]) -> tuple[EntryPoint, ...]:
    """`group`'s entry points, read once per `sys.path`: a read scans every installed
    distribution (12 ms here), and one `kalma evaluate` resolved its components 22 times."""
    return tuple(entry_points(group=group))


class Registry(Generic[T]):
    def __init__(self, kind: str, group: str):
        self.kind, self.group = kind, group
        self._entries: dict[str, Entry] = {}

    def add(self, name: str, target: str, argument: Literal["required", "optional", "none"] = "required", raw: bool = False) -> None:
        self._entries[name] = Entry(target, argument, raw)

    def entries(self) -> dict[str, Entry]:
        """The built-in entries, plus those other packages declare as entry points."""
        found = {ep.name: Entry(ep.value, "optional") for ep in _declared(self.group, tuple(sys.path))}
        return {**found, **self._entries}

    def names(self) -> list[str]:
        return list(self.entries())

    def forms(self) -> str:
        """Every name as a spec takes it (`lexical`, `hf-nli:…`), for errors and help texts."""
        return ", ".join(n if e.argument == "none" else f"{n}:…" for n, e in self.entries().items())

    def entry(self, name: str) -> Entry:
        entries = self.entries()
        if name not in entries:
            raise ConfigError(f"unknown {self.kind} {name!r}; known: {self.forms()}.{suggest(name, list(entries))}")
        return entries[name]

    def factory(self, name: str) -> Callable[..., T]:
        module, _, attr = self.entry(name).target.partition(":")
        return getattr(importlib.import_module(module), attr)

    def build(self, spec: str, **context: Any) -> T:
        """The component `spec` names; `context` goes to the factory as keywords (e.g. a run's settings)."""
        make, argument, kwargs = self._resolve(spec)
        kwargs |= context
        return make(argument, **kwargs) if argument is not None else make(**kwargs)

    def check(self, spec: str) -> None:
        """Raise the ConfigError that `build` would for an unknown name, a missing or unwanted
        argument or a bad option, without building anything (a config is checked on loading,
        not an hour into a run)."""
        self._resolve(spec)

    def _resolve(self, spec: str) -> tuple[Callable[..., T], str | None, dict[str, Any]]:
        """(factory, its positional argument or None, its typed keyword options)."""
        name = spec.partition(":")[0].partition(",")[0]
        entry = self.entry(name)
        name, argument, options = parse_spec(spec, entry.raw)
        if entry.argument == "required" and not argument:
            raise ConfigError(f"{self.kind} {name!r} needs an argument: {name}:…")
        if entry.argument == "none" and re.match(r"^[A-Za-z_][\w-]*=", argument):  # `conner:agg=mean` reads as options
            options = {**dict(kv.split("=", 1) for kv in argument.split(",") if kv), **options}
            argument = ""
        if entry.argument == "none" and argument:
            raise ConfigError(f"{self.kind} {name!r} takes no argument (got {spec!r})")
        make = self.factory(name)
        takes_argument = entry.argument == "required" or (entry.argument == "optional" and bool(argument))
        kwargs = typed_options(make, options, f"{self.kind} {spec!r}", positional=takes_argument)
        return make, (argument if takes_argument else None), kwargs


def spec_of(component: str | dict[str, Any]) -> str:
    """The spec string of a component given as a spec or as a TOML table.

    >>> spec_of({"name": "conner", "agg": "mean", "l": 3})
    'conner,agg=mean,l=3'
    >>> spec_of({"name": "openai-compatible", "argument": "http://h:8000/v1:m", "concurrency": 64})
    'openai-compatible:http://h:8000/v1:m,concurrency=64'
    """
    if isinstance(component, str):
        return component
    table = dict(component)
    name = table.pop("name", None)
    if not isinstance(name, str) or not name:
        raise ConfigError('a component table needs name = "…"')
    argument = table.pop("argument", "")
    if not isinstance(argument, str):
        raise ConfigError("'argument' must be a string")
    parts = [f"{name}:{argument}" if argument else name]
    for key, value in table.items():
        if isinstance(value, bool):
            text = "true" if value else "false"
        elif isinstance(value, (int, float, str)):
            text = str(value)
        else:
            raise ConfigError(f"option {key!r} must be a string, number or boolean")
        if "," in text or "=" in text:
            raise ConfigError(f"option {key!r} cannot hold ',' or '=' ({text!r})")
        parts.append(f"{key}={text}")
    return ",".join(parts)


def typed_options(make: Callable[..., Any], options: dict[str, str], where: str, positional: bool = True) -> dict[str, Any]:
    """`options` (strings from a spec) converted to the types of `make`'s keyword parameters
    (the first parameter takes the spec's argument when `positional`)."""
    if not options:
        return {}
    from pydantic import TypeAdapter, ValidationError

    target = make.__init__ if inspect.isclass(make) else make
    names = [n for n in inspect.signature(target).parameters if n != "self"]
    skip = {"spec", *names[:1]} if positional else {"spec"}
    # a spec sets what has a default; a parameter without one is what the caller gives (a run's settings)
    params = {
        n: p
        for n, p in inspect.signature(target).parameters.items()
        if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD) and n not in skip | {"self"} and not n.startswith("_") and p.default is not p.empty
    }
    hints = typing.get_type_hints(target)
    out = {}
    for key, raw in options.items():
        if key not in params:
            raise ConfigError(f"{where}: unknown option {key!r}; options: {', '.join(sorted(params)) or 'none'}.{suggest(key, list(params))}")
        try:
            out[key] = TypeAdapter(hints.get(key, str)).validate_python(None if raw in {"", "none", "None"} else raw)
        except ValidationError as exc:
            raise ConfigError(f"{where}: option {key!r}: {exc.errors()[0]['msg']}") from None
    return out
