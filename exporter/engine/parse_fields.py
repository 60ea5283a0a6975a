"""Typed, forgiving readers for raw API objects: the building blocks of ``parse.py``.

Owns how one field of a raw (JSON-decoded) object is read: navigation by dotted path, type
checks, RFC3339 and Go-duration decoding, size bounds, and the ``problems`` list that records a
field present with the wrong type. Every reader returns "missing" (None or an empty value)
instead of raising. Owns no knowledge of kinds or layouts (that is ``parse.py``).

Also owns the sharing of values that repeat across objects: ``word`` hands out one copy of each
repeated string (condition types, reasons, messages, kinds, namespaces), ``recall``/``remember``
one instance of each equal immutable value (label maps, owner references, counters). Decoded JSON
gives every object its own copies, and a fleet's projections are mostly such repeats. Both tables
are bounded and simply start over when full: sharing saves memory, nothing depends on it.
Decoded RFC3339 times are kept the same way, to save decoding them again.
"""

from __future__ import annotations

import re
from collections.abc import Hashable, Mapping, Sequence
from datetime import datetime
from types import MappingProxyType
from typing import Any, Final, TypeGuard, TypeVar

from exporter.engine.model import EMPTY_MAP, Condition, Gate, OneCopy, Ref, Status

MAX_STRING: Final = 4096  # messages can be huge (stack traces); labels and names never need more
MAX_PROBLEMS: Final = 16
MAX_LIST: Final = 256  # conditions, gates, addresses, node refs: more than this is not a real object
MAX_ID_LIST: Final = 10_000  # providerIDList / nodeRefs follow the pool size

_PERCENT = re.compile(r"^[0-9]{1,9}%$")
_DURATION_PART = re.compile(r"([0-9]+(?:\.[0-9]+)?)(ns|us|µs|ms|s|m|h)")
_DURATION_UNITS: Final = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}

_STATUSES: Final = {"True": Status.TRUE, "False": Status.FALSE, "Unknown": Status.UNKNOWN}

_T = TypeVar("_T")

# Not sys.intern: interned strings are immortal on some CPython versions (3.12), and names,
# uids and messages come and go with the fleet: a ``OneCopy`` keeps the repeats alive only while
# they are looked up, and its size is bounded.
MAX_WORDS: Final = 1 << 14  # per generation (OneCopy)
MAX_SHARED: Final = 1 << 16
_words: OneCopy[str] = OneCopy(MAX_WORDS)
_shared: dict[Hashable, Any] = {}


def word(value: str) -> str:
    """The one copy of a string that repeats across objects (types, reasons, kinds, label values)."""
    return _words.one(value)


def recall(key: Hashable) -> Any:
    """The shared instance of a value remembered under ``key``, or None.

    Keys identify a value completely and start with a tag naming its type: one table serves every
    kind of shared value. Callers build the key from raw fields, so a hit skips building the value.
    """
    return _shared.get(key)


def remember(key: Hashable, value: _T) -> _T:
    """Share ``value`` under ``key`` from now on (see ``recall``); returns ``value``."""
    if len(_shared) >= MAX_SHARED:
        _shared.clear()
    _shared[key] = value
    return value


def _same_condition(
    candidates: list[Condition] | None, status: Status, reason: str, message: str, when: float | None,
    observed: int | None, severity: str,
) -> Condition | None:
    """The candidate (a previous condition of the same type) equal to these fields, if any."""
    if candidates:
        for c in candidates:
            if (c.status is status and c.last_transition_time == when and c.reason == reason
                    and c.message == message and c.observed_generation == observed
                    and c.severity == severity):
                return c
    return None


class Fields:
    """Reads fields of one raw object, collecting a short description of every unreadable one."""

    def __init__(self, problems: list[str] | None = None,
                 previous: Sequence[tuple[Condition, ...]] = ()) -> None:
        self.problems: list[str] = problems if problems is not None else []
        # The object's own name, once known: fields equal to it (refs, node names) share its copy.
        self.name = ""
        self._generation: int | None = None  # the last condition's observedGeneration
        # The condition lists of the object's previous projection (see ``conditions``).
        self._previous = previous
        self._reusable: dict[str, list[Condition]] | None = None

    def problem(self, path: str, expected: str, value: object) -> None:
        text = f"{path or '<object>'}: expected {expected}, got {type(value).__name__}"
        if len(self.problems) < MAX_PROBLEMS and text not in self.problems:
            self.problems.append(text)

    # ---- navigation ------------------------------------------------------------------------

    def get(self, obj: object, path: str) -> Any:
        """The value at a dotted path, or None when any step is missing or not an object."""
        current: Any = obj
        for part in _splits.get(path) or _split(path):
            # Decoded JSON is plain dicts: one type test per step, the ABC check only for others.
            if type(current) is dict:
                current = current.get(part)
            elif current is None:
                return None
            elif is_map(current):
                current = current.get(part)
            else:
                self._not_an_object(obj, path)
                return None
        return current

    def _not_an_object(self, obj: object, path: str) -> None:
        """Record the step of ``path`` that is not an object (walked again: the rare path)."""
        current: Any = obj
        parts = _split(path)
        for index, part in enumerate(parts):
            if current is None:
                return
            if not is_map(current):
                self.problem(".".join(parts[:index]), "object", current)
                return
            current = current.get(part)

    def mapping(self, obj: object, path: str) -> Mapping[str, Any] | None:
        value = self.get(obj, path)
        if value is None:
            return None
        if not is_map(value):
            self.problem(path, "object", value)
            return None
        return value

    def has(self, obj: object, path: str) -> bool:
        """Whether the field is present with a non-null value of any type."""
        return self.get(obj, path) is not None

    # ---- scalars ---------------------------------------------------------------------------

    def str_(self, obj: object, path: str) -> str:
        value = self.get(obj, path)
        if type(value) is str:
            return value if len(value) <= MAX_STRING else value[:MAX_STRING]
        return self.as_str(value, path)

    def word_(self, obj: object, path: str) -> str:
        """``str_`` for a field whose values repeat across objects (kinds, phases, versions): shared."""
        value = self.str_(obj, path)
        return (_words.newer.get(value) or word(value)) if value else ""

    def as_str(self, value: object, path: str) -> str:
        if type(value) is str:
            return value if len(value) <= MAX_STRING else value[:MAX_STRING]
        if value is None:
            return ""
        if not isinstance(value, str):
            self.problem(path, "string", value)
            return ""
        return bounded(value)

    def int_(self, obj: object, path: str) -> int | None:
        value = self.get(obj, path)
        if value is None or type(value) is int:  # not bool: type(True) is bool
            return value
        return self.as_int(value, path)

    def as_int(self, value: object, path: str) -> int | None:
        if value is None or type(value) is int:
            return value
        if isinstance(value, bool):
            self.problem(path, "integer", value)
            return None
        if isinstance(value, int):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
        self.problem(path, "integer", value)
        return None

    def bool_(self, obj: object, path: str) -> bool | None:
        value = self.get(obj, path)
        if value is None or value is True or value is False:
            return value
        if not isinstance(value, bool):
            self.problem(path, "boolean", value)
            return None
        return value

    def time(self, obj: object, path: str) -> float | None:
        return self.as_time(self.get(obj, path), path)

    def as_time(self, value: object, path: str) -> float | None:
        if value is None:
            return None
        parsed = _parse_rfc3339(value) if type(value) is str else parse_time(value)
        if parsed is None:
            self.problem(path, "RFC3339 time", value)
        return parsed

    def int_or_percent(self, obj: object, path: str) -> int | str | None:
        """An intstr as the API writes it: an integer or "N%" (a bare numeric string is invalid)."""
        value = self.get(obj, path)
        if value is None:
            return None
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, str) and _PERCENT.match(value.strip()):
            return value.strip()
        self.problem(path, "integer or percent", value)
        return None

    def duration_seconds(self, obj: object, path: str) -> int | None:
        """A Go duration string ("10m", "1h30m", "600s") as whole seconds."""
        value = self.get(obj, path)
        if value is None:
            return None
        if isinstance(value, str):
            seconds = parse_duration(value)
            if seconds is not None:
                return seconds
        self.problem(path, "duration", value)
        return None

    # ---- lists -----------------------------------------------------------------------------

    def list_(self, obj: object, path: str, limit: int = MAX_LIST) -> list[Any]:
        value = self.get(obj, path)
        if value is None:
            return []
        if not isinstance(value, list):
            self.problem(path, "list", value)
            return []
        return value[:limit]

    def str_list(self, obj: object, path: str, limit: int = MAX_ID_LIST) -> tuple[str, ...]:
        items = self.list_(obj, path, limit)
        if any(not isinstance(item, str) for item in items):
            self.problem(f"{path}[]", "string", next(i for i in items if not isinstance(i, str)))
        return tuple(bounded(item) for item in items if isinstance(item, str))

    def names(self, obj: object, path: str, limit: int = MAX_ID_LIST) -> tuple[str, ...]:
        """The ``name`` of every object reference in a list (e.g. status.nodeRefs)."""
        result = []
        for item in self.list_(obj, path, limit):
            name = item.get("name") if is_map(item) else None
            if isinstance(name, str) and name:
                result.append(bounded(name))
            else:
                self.problem(f"{path}[].name", "string", name)
        return tuple(result)

    # ---- composite API types ---------------------------------------------------------------

    def conditions(
        self, obj: object, path: str, only: frozenset[str] | None = None
    ) -> tuple[Condition, ...]:
        """A list of conditions (metav1 or CAPI v1beta1); the first of each type wins.

        ``only``: the types to keep (None: all); the others are neither read nor checked.
        """
        items = self.list_(obj, path)
        if not items:
            return ()
        result: list[Condition] = []
        seen: set[str] = set()
        # A Machine carries ~15 conditions and every watch event of it is read again: the common
        # case (a plain dict whose fields all have their exact types) is read here with no call
        # per field; anything else goes through _condition, which reports what is odd.
        words, statuses, times, generation = _words.newer, _STATUSES, _times, self._generation
        reusable = self._reusable
        if reusable is None and self._previous:
            reusable = self._reusable = {}
            for listed in self._previous:
                for c in listed:
                    reusable.setdefault(c.type, []).append(c)
        for item in items:
            if type(item) is not dict and not is_map(item):
                self.problem(f"{path}[]", "object", item)
                continue
            type_ = item.get("type")
            if (type(type_) is not str and not isinstance(type_, str)) or not type_:
                self.problem(f"{path}[].type", "string", type_)
                continue
            if type_ in seen or (only is not None and type_ not in only):
                continue
            seen.add(type_)
            status = item.get("status")
            reason = item.get("reason", "")
            message = item.get("message", "")
            severity = item.get("severity", "")
            when = item.get("lastTransitionTime")
            observed = item.get("observedGeneration")
            if (
                type(item) is dict and type(status) is str and type(reason) is str
                and type(message) is str and type(severity) is str and len(type_) <= 316
                and len(reason) <= MAX_STRING and len(message) <= MAX_STRING
                and len(severity) <= MAX_STRING and (status := statuses.get(status)) is not None
                and (observed is None or type(observed) is int)
                and (when is None or (type(when) is str
                                      and ((seconds := times.get(when)) is not None
                                           or (seconds := _parse_rfc3339(when)) is not None)))
            ):
                if reusable:
                    # An update of an object mostly repeats its conditions: the previous
                    # projection's equal one is taken instead of a copy (cheaper than building it,
                    # and what compares it later stops at identity).
                    same = _same_condition(reusable.get(type_), status, reason, message,
                                           None if when is None else seconds, observed, severity)
                    if same is not None:
                        result.append(same)
                        continue
                if observed == generation:
                    observed = generation  # see _condition
                else:
                    self._generation = generation = observed
                result.append(Condition(
                    words.get(type_) or word(type_), status,
                    reason and (words.get(reason) or word(reason)),
                    message and (words.get(message) or word(message)),
                    None if when is None else seconds, observed,
                    severity and (words.get(severity) or word(severity)),
                ))
            else:
                result.append(self._condition(item, path, type_))
                generation = self._generation
        for listed in self._previous:  # all of them reused, in order: the previous tuple itself
            if len(listed) == len(result) and all(a is b for a, b in zip(listed, result, strict=True)):
                return listed
        return tuple(result)

    def _condition(self, item: Mapping[str, Any], list_path: str, raw_type: str) -> Condition:
        # Every field is checked by exact type first; the general readers, and the field's path
        # for the problem text, only run for values that are odd.
        status = item.get("status")
        parsed = _STATUSES.get(status) if type(status) is str else None
        if parsed is None:
            if status not in (None, "True", "False", "Unknown", True, False):
                self.problem(f"{list_path}[{raw_type}].status", "True|False|Unknown", status)
            parsed = Status.parse(status)
        reason = item.get("reason", "")
        if type(reason) is not str or len(reason) > MAX_STRING:
            reason = self.as_str(reason, f"{list_path}[{raw_type}].reason")
        message = item.get("message", "")
        if type(message) is not str or len(message) > MAX_STRING:
            message = self.as_str(message, f"{list_path}[{raw_type}].message")
        when = item.get("lastTransitionTime")
        if type(when) is str and (seconds := _parse_rfc3339(when)) is not None:
            when = seconds
        else:
            when = self.as_time(when, f"{list_path}[{raw_type}].lastTransitionTime")
        generation = item.get("observedGeneration")
        if generation is not None and type(generation) is not int:
            generation = self.as_int(generation, f"{list_path}[{raw_type}].observedGeneration")
        elif generation == self._generation:
            # Every condition of an object usually carries the same generation, and ints above
            # 256 are an object per occurrence in decoded JSON.
            generation = self._generation
        else:
            self._generation = generation
        severity = item.get("severity", "")
        if type(severity) is not str or len(severity) > MAX_STRING:
            severity = self.as_str(severity, f"{list_path}[{raw_type}].severity")
        type_ = raw_type if len(raw_type) <= 316 else raw_type[:316]
        # Types, reasons and messages repeat across the fleet; the decoder made a copy per object.
        # The table is read inline (a hit is the common case); word() only adds what is missing.
        words = _words.newer
        return Condition(words.get(type_) or word(type_), parsed,
                         reason and (words.get(reason) or word(reason)),
                         message and (words.get(message) or word(message)), when, generation,
                         severity and (words.get(severity) or word(severity)))

    def gates(self, obj: object, path: str) -> tuple[Gate, ...] | None:
        """availabilityGates / readinessGates; None when the field is unset (not when empty)."""
        value = self.get(obj, path)
        if value is None:
            return None
        if not isinstance(value, list):
            self.problem(path, "list", value)
            return None
        gates = []
        for item in value[:MAX_LIST]:
            type_ = item.get("conditionType") if is_map(item) else None
            if not isinstance(type_, str) or not type_:
                self.problem(f"{path}[].conditionType", "string", type_)
                continue
            polarity = self.str_(item, "polarity")
            gates.append(Gate(condition_type=word(bounded(type_, 316)), negative=polarity == "Negative"))
        return tuple(gates)

    def ref(self, obj: object, path: str) -> Ref | None:
        """An object reference: v1beta2 ``apiGroup`` or v1beta1 ``apiVersion`` (group part kept)."""
        value = self.mapping(obj, path)
        if value is None:
            return None
        kind, name = self.str_(value, "kind"), self.str_(value, "name")
        if not kind or not name:
            self.problem(path, "reference with kind and name", value)
            return None
        group = self.str_(value, "apiGroup")
        if not group:
            api_version = self.str_(value, "apiVersion")
            group = api_version.rsplit("/", 1)[0] if "/" in api_version else ""
        if not group:  # kept: the kind and name still say what is referenced
            self.problem(path, "reference with apiGroup (v1beta1: apiVersion)", value)
        namespace = self.str_(value, "namespace")
        # Refs usually name an object after their owner (a Machine's KubeadmConfig and DockerMachine).
        if name == self.name:
            name = self.name
        return Ref(kind=word(kind), name=name, api_group=word(group),
                        namespace=word(namespace) if namespace else "")


def shared_map(flat: list[str]) -> Mapping[str, str]:
    """A read-only string map from ``[k1, v1, k2, v2, ...]``, one instance per distinct content.

    Sibling objects carry the same labels (cluster, deployment, set names) and Machines of one
    pool the same node info, so most maps of a fleet are repeats.
    """
    if not flat:
        return EMPTY_MAP
    key = ("map", *flat)
    found: Mapping[str, str] | None = _shared.get(key)
    if found is None:
        found = remember(key, MappingProxyType(dict(zip(flat[::2], flat[1::2], strict=True))))
    return found


def string_map(f: Fields, raw: object, path: str) -> dict[str, str]:
    """A string-to-string map (labels, annotations, nodeInfo); non-string entries are dropped."""
    value = f.mapping(raw, path)
    if value is None:
        return {}
    return {k: v for k, v in value.items() if isinstance(k, str) and isinstance(v, str)}


def bounded(value: str, limit: int = MAX_STRING) -> str:
    return value if len(value) <= limit else value[:limit]


def is_map(value: object) -> TypeGuard[Mapping[str, Any]]:
    # dict first: the ABC check is slow and decoded JSON/YAML objects are plain dicts.
    return isinstance(value, (dict, Mapping))


# Paths are literals of the readers (a few hundred): a plain dict beats an lru_cache call.
_splits: dict[str, tuple[str, ...]] = {}
_MAX_SPLITS: Final = 4096


def _split(path: str) -> tuple[str, ...]:
    parts = _splits.get(path)
    if parts is None:
        if len(_splits) >= _MAX_SPLITS:
            _splits.clear()
        parts = _splits[path] = tuple(path.split("."))
    return parts


def parse_time(value: object) -> float | None:
    """RFC3339 (with Z or an offset, optional fraction) → Unix seconds; None when unreadable."""
    if isinstance(value, datetime):
        return value.timestamp() if value.tzinfo is not None else None
    if not isinstance(value, str):
        return None
    return _parse_rfc3339(value)


# Objects of one fleet share many timestamps (creation, transitions), and the conditions of one
# object mostly carry two or three. A plain dict, read inline by the hot readers, beats an
# lru_cache call; it starts over when full.
MAX_TIMES: Final = 4096
_times: dict[str, float] = {}


def _parse_rfc3339(value: str) -> float | None:
    """``parse_time`` for a string, through the table of decoded times."""
    seconds = _times.get(value)
    if seconds is not None:
        return seconds
    if not 10 <= len(value) <= 64:
        return None
    text = value.strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        return None
    if parsed.tzinfo is None:
        return None
    if len(_times) >= MAX_TIMES:
        _times.clear()
    _times[value] = seconds = parsed.timestamp()
    return seconds


def parse_duration(value: str) -> int | None:
    """A Go ``time.Duration`` string as whole seconds (rounded down); None when unreadable."""
    text = value.strip()
    if text in ("0", ""):
        return 0 if text == "0" else None
    if len(text) > 64:
        return None
    position, total = 0, 0.0
    for match in _DURATION_PART.finditer(text):
        if match.start() != position:
            return None
        total += float(match.group(1)) * _DURATION_UNITS[match.group(2)]
        position = match.end()
    if position != len(text):
        return None
    return int(total)


# Kubernetes resource.Quantity: a signed decimal number, then a binary suffix (Ki..Ei), a decimal
# SI suffix (n..E) or a decimal exponent (e3, E-2). As text it is what the API server writes.
_QUANTITY = re.compile(
    r"^([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?[0-9]+)?$"
)
_QUANTITY_SUFFIXES: Final = {
    "": 1.0, "n": 1e-9, "u": 1e-6, "m": 1e-3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15,
    "E": 1e18, "Ki": 2.0**10, "Mi": 2.0**20, "Gi": 2.0**30, "Ti": 2.0**40, "Pi": 2.0**50, "Ei": 2.0**60,
}


def parse_quantity(value: object) -> float | None:
    """A Kubernetes quantity ("8", "500m", "32595212Ki", "1e3") as a float; None when unreadable.

    A bare number counts too: a manifest written by hand may hold ``cpu: 8`` (YAML decodes an int).
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value) if value == value else None  # NaN is no quantity
    if not isinstance(value, str) or len(value) > 64:
        return None
    match = _QUANTITY.match(value.strip())
    if match is None:
        return None
    suffix = match.group(2) or ""
    if suffix[:1] in ("e", "E") and len(suffix) > 1:
        exponent = int(suffix[1:])
        return float(match.group(1)) * 10.0**exponent if abs(exponent) <= 30 else None
    return float(match.group(1)) * _QUANTITY_SUFFIXES[suffix]
