"""What is still wrong with a call's arguments once coercion (coerce.py) has made what it
safely can of them, checked against its tool's JSON schema and said so a model can fix it.

The checking is jsonschema's, by the draft a schema's `$schema` names (2020-12 when it names
none). A tool declared `strict` is held to every keyword of its schema; any other tool to
the keywords that decide whether it can run the call at all (a missing or unknown property,
a value of another type or outside its enum), and to the structure that carries them to
nested values. A looser tool's `maxLength` or `minimum` is the tool's own to enforce.

Two keywords are never run: `pattern` and `patternProperties`. They are regular expressions
from the request, run by Python's backtracking engine on text the model wrote, where a
pattern such as `(a+)+$` takes exponential time; an object whose schema has
`patternProperties` is not checked for unknown properties either. The checks of one answer
visit at most MAX_CHECK_VISITS keywords between them (`CheckBudget`: nested `anyOf`s fan out
exponentially), and a schema the check cannot read (an unknown type, an unresolvable `$ref`,
a malformed keyword) or cannot finish makes no problem: the call goes as it is, and the tool
judges it.

A `$ref` resolves inside the request's own schema only (`#/$defs/…`, or an `$id` the schema
itself declares). Anything else, `http://…` or `file://…`, is an unknown reference, noted in
the budget's `unknown_references`: left to jsonschema's default, it fetched the URL from the
proxy's network, or read the file from its disk, while the event loop waited.

A schema's check is built once (`SchemaCheck`: its validator and the registry its
references resolve in) and run on each of its tool's calls: built anew for each call, it took
two thirds of a typical call's check.

jsonschema is imported with the first check, not with the protocols: it was a sixth of a
worker's start, and a worker may serve many requests before one holds a call."""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from itertools import islice
from operator import methodcaller
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from jsonschema import ValidationError
    from jsonschema.protocols import Validator
    from referencing import Registry, Resource

    Keyword = Callable[[Validator, Any, Any, Mapping[str, Any]], Iterable[ValidationError] | None]

# How many schema keywords the checks of one answer may visit: a real call visits one to a
# few per value (tens for a typical call, a few thousand for a long list of objects), at
# 5-20 µs each; past it a call is not checked. The cap stops a hostile schema's fan-out at
# a fraction of a second of CPU per answer, however many calls it holds.
MAX_CHECK_VISITS = 20_000
# A keyword that compares values costs beyond its visit, charged in visits: `enum` compares
# the value with each of its values, `uniqueItems` (strict tools only) each item with every
# one before it when they do not sort (objects). A comparison costs about a microsecond, a
# visit 5-20: charged one visit a visit each, a 20,000-value enum checked against 300 values
# took 4.9 s, uniqueItems over 2,000 objects 5.7 s.
COMPARISONS_PER_VISIT = 8
# Enough problems for a model to fix its call; a call wrong in more ways is best written anew.
MAX_PROBLEMS = 5
# A problem quotes the value at fault (jsonschema writes its repr): a long one is cut in the
# middle, keeping its start and what the schema wanted, which the message ends with.
MAX_PROBLEM_CHARS = 300
# The keywords every call is held to, of any draft: types, enums, required and unknown
# properties, and those that carry them to nested values.
CORE_KEYWORDS = frozenset(
    {
        *("type", "enum", "const", "required", "additionalProperties", "properties"),
        *("items", "prefixItems", "additionalItems", "allOf", "anyOf", "oneOf"),
        *("$ref", "$dynamicRef", "$recursiveRef"),
    }
)
REGEX_KEYWORDS = frozenset({"pattern", "patternProperties"})
# Keywords that look into `patternProperties` to know which properties are unknown.
PATTERN_DEPENDENT = frozenset({"additionalProperties", "unevaluatedProperties"})


class _OutOfVisits(Exception):
    """The answer's checks visited MAX_CHECK_VISITS keywords: no verdict."""


@dataclass(slots=True)
class CheckBudget:
    """The keyword visits left to one answer's checks, and the references outside their
    schemas they met (never fetched)."""

    left: int = MAX_CHECK_VISITS
    unknown_references: set[str] = field(default_factory=set)


# The budget of the running check. A check runs start to end without yielding to the event
# loop, so it is the only one running in its thread.
_budget: ContextVar[CheckBudget] = ContextVar("schema_check_budget")
_CHECKERS: dict[tuple[type[Validator], bool], type[Validator]] = {}


class SchemaCheck:
    """One tool schema's check, built once and run on each of the tool's calls, each charged
    to the budget of the answer that holds it.

    >>> check = SchemaCheck(tool.parameters, strict=False)
    >>> check.problems({"city": 5}, budget)
    ["city: 5 is not of type 'string'"]
    """

    __slots__ = ("_validator",)

    def __init__(self, schema: Any, *, strict: bool = False) -> None:
        self._validator = _validator(schema, strict=strict)

    def problems(self, arguments: Any, budget: CheckBudget | None = None) -> list[str]:
        """What does not follow the schema in `arguments` (at most MAX_PROBLEMS, each with
        where it is: "files[1].path: 5 is not of type 'string'"); none when it follows it,
        or when the schema cannot be checked. The visits are charged to `budget` (the
        answer's: a fresh one when none is given)."""
        if self._validator is None:
            return []
        token = _budget.set(budget or CheckBudget())
        try:
            errors = self._validator.iter_errors(arguments)
            return [_said(error) for error in islice(errors, MAX_PROBLEMS)]
        except _unreadable():
            return []
        finally:
            _budget.reset(token)


def argument_problems(
    arguments: Any, schema: Any, *, strict: bool = False, budget: CheckBudget | None = None
) -> list[str]:
    """`SchemaCheck(schema, strict=strict).problems(arguments, budget)`, for one call."""
    return SchemaCheck(schema, strict=strict).problems(arguments, budget)


def _validator(schema: Any, *, strict: bool) -> Validator | None:
    """The validator of `schema`, its references resolved in the request alone; None when
    there is nothing to check, or the schema cannot be read (a `$schema` or `$id` that is
    not a string)."""
    if not isinstance(schema, Mapping) or not schema:
        return None
    try:
        return _checker(_draft(schema), strict=strict)(schema, registry=_request_only())
    except _unreadable():
        return None


@functools.cache
def _request_only() -> Registry[Any]:
    """A registry that retrieves nothing: a reference outside the schema is noted in the
    running check's budget, and fails to resolve (jsonschema still knows the drafts' own
    meta-schemas). One serves every check: a registry is immutable, what a check resolves
    in it is the check's own."""
    from referencing import Registry
    from referencing.exceptions import NoSuchResource

    # referencing declares its attrs classes through the old `__dataclass_transform__`
    # spelling, which mypy 2 does not read: it sees no fields in their constructors.
    def refuse(uri: str) -> Resource[Any]:
        _budget.get().unknown_references.add(uri)
        raise NoSuchResource(ref=uri)  # type: ignore[call-arg]  # attrs' init, unseen by mypy

    return Registry(retrieve=refuse)  # type: ignore[call-arg]  # the same


@functools.cache
def _unreadable() -> tuple[type[BaseException], ...]:
    """What a check that cannot read its schema, or cannot finish, raises: a keyword's value
    it cannot use ("multipleOf": 0, "required": 5) among them (imported once a check is
    built, so jsonschema is loaded by then)."""
    from jsonschema.exceptions import UndefinedTypeCheck, UnknownType
    from referencing.exceptions import Unresolvable

    return (
        *(_OutOfVisits, UnknownType, UndefinedTypeCheck, Unresolvable, RecursionError),
        *(TypeError, ValueError, LookupError, AttributeError, ArithmeticError),
    )


def _draft(schema: Mapping[str, Any]) -> type[Validator]:
    """The validator class of the draft `$schema` names, 2020-12 when it names none; an
    unknown one is read as 2020-12 (jsonschema warns of that, about its own future, not the
    request's)."""
    from jsonschema import validators

    default: type[Validator] = validators.Draft202012Validator
    if "$schema" not in schema:
        return default
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        draft: type[Validator] = validators.validator_for(schema, default=default)
    return draft


def _checker(draft: type[Validator], *, strict: bool) -> type[Validator]:
    """`draft`'s validator holding calls to the keywords above, each visit counted (made
    once per draft and strictness)."""
    made = _CHECKERS.get((draft, strict))
    if made is not None:
        return made
    keywords = {
        name: _counted(_adapted(name, keyword), _COSTS.get(name, _one_visit))
        for name, keyword in draft.VALIDATORS.items()
        if name not in REGEX_KEYWORDS and (strict or name in CORE_KEYWORDS)
    }
    from jsonschema import validators

    checker: type[Validator] = validators.create(
        meta_schema=draft.META_SCHEMA,
        validators=keywords,
        type_checker=draft.TYPE_CHECKER,
        format_checker=None,  # `format` annotates; a model's date is the tool's to parse
        id_of=draft.ID_OF,
        applicable_validators=methodcaller("items"),
    )
    _CHECKERS[draft, strict] = checker
    return checker


def _adapted(name: str, keyword: Keyword) -> Keyword:
    if name in PATTERN_DEPENDENT:
        return _unless_patterned(keyword)
    if name == "required":
        return _absent_may_be_null(keyword)
    return _BRANCHES.get(name, keyword)


def _fails(validator: Validator, instance: Any, branch: Any, index: int) -> bool:
    """Whether `instance` fails the branch `branch` (at `index`): its first error tells, and
    no more of them are made. jsonschema's `anyOf` and `oneOf` keep every failing branch's
    errors, which a problem never shows: +296 MB for a `required` list of 50,000 names,
    +211 MB for 200 branches against a 1 MB string (each error quotes the value)."""
    return next(iter(validator.descend(instance, branch, schema_path=index)), None) is not None


def _any_of(
    validator: Validator, branches: Any, instance: Any, _schema: Mapping[str, Any]
) -> Iterator[ValidationError]:
    from jsonschema.exceptions import ValidationError

    if all(_fails(validator, instance, branch, at) for at, branch in enumerate(branches)):
        yield ValidationError(f"{instance!r} is not valid under any of the given schemas")


def _one_of(
    validator: Validator, branches: Any, instance: Any, _schema: Mapping[str, Any]
) -> Iterator[ValidationError]:
    from jsonschema.exceptions import ValidationError

    valid = [b for at, b in enumerate(branches) if not _fails(validator, instance, b, at)]
    if not valid:
        yield ValidationError(f"{instance!r} is not valid under any of the given schemas")
    elif len(valid) > 1:
        reprs = ", ".join(repr(branch) for branch in [*valid[1:], valid[0]])
        yield ValidationError(f"{instance!r} is valid under each of {reprs}")


# The keywords of branches, each in place of jsonschema's own (the same verdicts and words).
_BRANCHES: dict[str, Keyword] = {"anyOf": _any_of, "oneOf": _one_of}


def _absent_may_be_null(required: Keyword) -> Keyword:
    """`required`, where a property whose schema admits null may be left out: OpenAI's strict
    mode lists every property as required and marks the optional ones nullable (Roo Code's
    `execute_command` has `cwd` and `timeout` so), and a model that leaves one out means null;
    asking it again for them cost a second upstream request per call."""

    def absent_may_be_null(
        validator: Validator, value: Any, instance: Any, schema: Mapping[str, Any]
    ) -> Iterable[ValidationError] | None:
        properties = schema.get("properties")
        if isinstance(properties, Mapping) and isinstance(value, list):
            value = [name for name in value if not _admits_null(properties.get(name))]
        return required(validator, value, instance, schema)

    return absent_may_be_null


def _admits_null(schema: Any) -> bool:
    if not isinstance(schema, Mapping):
        return False
    kind = schema.get("type")
    if kind == "null" or (isinstance(kind, list) and "null" in kind):
        return True
    return any(
        _admits_null(option) for key in ("anyOf", "oneOf") for option in schema.get(key) or ()
    )


def _one_visit(_value: Any, _instance: Any) -> int:
    return 1


def _enum_visits(values: Any, _instance: Any) -> int:
    """The instance compared with each of the values."""
    count = len(values) if isinstance(values, list) else 0
    return 1 + count // COMPARISONS_PER_VISIT


def _unique_items_visits(unique: Any, instance: Any) -> int:
    """Each item compared with every one before it (items that sort cost less: no matter)."""
    count = len(instance) if unique is True and isinstance(instance, list) else 0
    return 1 + count * (count - 1) // 2 // COMPARISONS_PER_VISIT


# The keywords that cost more than one visit: what each costs, from its value and instance.
_COSTS: dict[str, Callable[[Any, Any], int]] = {
    "enum": _enum_visits,
    "uniqueItems": _unique_items_visits,
}


def _counted(keyword: Keyword, cost: Callable[[Any, Any], int]) -> Keyword:
    def counted(
        validator: Validator, value: Any, instance: Any, schema: Mapping[str, Any]
    ) -> Iterable[ValidationError] | None:
        visits = _budget.get()
        visits.left -= cost(value, instance)
        if visits.left < 0:
            raise _OutOfVisits
        return keyword(validator, value, instance, schema)

    return counted


def _unless_patterned(keyword: Keyword) -> Keyword:
    def unless_patterned(
        validator: Validator, value: Any, instance: Any, schema: Mapping[str, Any]
    ) -> Iterable[ValidationError] | None:
        if "patternProperties" in schema:
            return None
        return keyword(validator, value, instance, schema)

    return unless_patterned


def _said(error: ValidationError) -> str:
    message = error.message
    if len(message) > MAX_PROBLEM_CHARS:
        half = MAX_PROBLEM_CHARS // 2
        message = f"{message[:half]} … {message[-half:]}"
    where = _location(error.absolute_path)
    return f"{where}: {message}" if where else message


def _location(path: Iterable[Any]) -> str:
    """A value's place in the arguments, as code would name it: `files[1].path`."""
    return "".join(_steps(path)).lstrip(".")


def _steps(path: Iterable[Any]) -> Iterator[str]:
    for step in path:
        yield f"[{step}]" if isinstance(step, int) else f".{step}"
