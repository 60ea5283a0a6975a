"""What an API server does to a custom resource on write: structural pruning, then defaulting.

Implemented from the documented behaviour of apiextensions.k8s.io/v1 structural schemas
("Specifying a structural schema", "Field pruning", "Defaulting" in the Kubernetes docs):

Pruning (``prune``): a field is kept only when the schema knows it.

* an object with ``properties`` keeps exactly those keys; a key's value is pruned with its
  property schema;
* an object with an ``additionalProperties`` schema keeps every key, each value pruned with that
  schema (``additionalProperties: true`` keeps every value as is);
* an object with ``x-kubernetes-preserve-unknown-fields: true`` keeps keys its schema does not
  name, as they are; keys it does name are still pruned by their property schemas;
* ``x-kubernetes-embedded-resource: true`` marks a nested object: its ``apiVersion``, ``kind``
  and ``metadata`` are kept although the schema need not list them, but its ``metadata`` keeps
  only the fields an ObjectMeta has (the server decodes it as one: ``metadata.junk`` goes);
* at the root, ``apiVersion``, ``kind`` and ``metadata`` are always kept, ``metadata`` as is;
* array items are pruned with the ``items`` schema; a value whose type does not match the schema
  (a string where an object is expected) is left alone: validation, not pruning, rejects it;
* ``allOf``/``anyOf``/``oneOf``/``not`` never make a field known: in a structural schema they only
  validate, every field has to be specified in the structural part.

Defaulting (``apply_defaults``): in every object that exists, each property that is absent gets
a deep copy of its schema's ``default``; then every value is defaulted recursively, so defaults
reach array items, ``additionalProperties`` values, and the inside of a default just applied. A
``null`` in a field that is not ``nullable: true`` is first dropped (and then defaulted when it
has a default); ``nullable: true`` keeps the ``null`` and does not default it.

Not modelled: validation (types, enums, patterns, CEL, required: the fake stores what a server
would answer 422 to); the rest of ``metadata`` handling (a kube-apiserver also drops unknown
fields of the root's ``metadata``, kept as is here, and answers 400 to an embedded ``metadata``
with a field of the wrong type, like ``labels: 1``); nulls as array items or as
``additionalProperties`` values (only nulls of named properties are dropped or defaulted);
defaulting on read with the storage version's schema (the fake prunes and defaults once, on
write, with the schema of the version written); and CRDs with ``spec.preserveUnknownFields:
true`` (apiextensions v1beta1 only), which a server does not prune.
"""

from __future__ import annotations

import copy
from typing import Any

Schema = dict[str, Any]

PRESERVE = "x-kubernetes-preserve-unknown-fields"
EMBEDDED = "x-kubernetes-embedded-resource"
TYPE_META = ("apiVersion", "kind", "metadata")
# The JSON fields of ObjectMeta (k8s.io/apimachinery meta/v1), what an embedded metadata keeps.
OBJECT_META = frozenset({
    "name", "generateName", "namespace", "selfLink", "uid", "resourceVersion", "generation",
    "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "labels", "annotations",
    "ownerReferences", "finalizers", "managedFields",
})


def prune_and_default(obj: dict[str, Any], schema: Schema) -> dict[str, Any]:
    """A copy of the resource ``obj`` as a server with this openAPIV3Schema stores it."""
    out = copy.deepcopy(obj)
    prune(out, schema, root=True)
    apply_defaults(out, schema)
    return out


# ---- pruning -------------------------------------------------------------------------------


def prune(value: Any, schema: Schema | None, *, root: bool = False) -> None:
    """Drop, in place, every field of ``value`` that ``schema`` does not specify."""
    if schema is None:
        return
    if isinstance(value, dict):
        _prune_object(value, schema, root)
    elif isinstance(value, list):
        for item in value:
            prune(item, schema.get("items"))


def _prune_object(obj: dict[str, Any], schema: Schema, root: bool) -> None:
    properties: dict[str, Schema] = schema.get("properties") or {}
    additional = schema.get("additionalProperties")
    preserve = bool(schema.get(PRESERVE))
    # apiVersion/kind/metadata of the resource itself, or of an embedded one, are always kept;
    # a schema the root or embedded object gives them still prunes below them (not metadata).
    type_meta = root or bool(schema.get(EMBEDDED))
    if not root and type_meta and isinstance(obj.get("metadata"), dict):
        for key in [k for k in obj["metadata"] if k not in OBJECT_META]:
            del obj["metadata"][key]
    for key in list(obj):
        if key in properties:
            if not (type_meta and key == "metadata"):
                prune(obj[key], properties[key])
        elif type_meta and key in TYPE_META:
            continue
        elif isinstance(additional, dict):
            prune(obj[key], additional)
        elif additional is True or preserve:
            continue  # unknown, but kept as is
        else:
            del obj[key]


# ---- defaulting ----------------------------------------------------------------------------


def apply_defaults(value: Any, schema: Schema | None) -> None:
    """Fill, in place, the absent fields of the objects in ``value`` that have a schema default."""
    if schema is None:
        return
    if isinstance(value, list):
        for item in value:
            apply_defaults(item, schema.get("items"))
        return
    if not isinstance(value, dict):
        return
    properties: dict[str, Schema] = schema.get("properties") or {}
    for key, prop in properties.items():
        if key in value and value[key] is None and not prop.get("nullable"):
            del value[key]  # a null where null is not allowed counts as absent
        if key not in value and "default" in prop:
            value[key] = copy.deepcopy(prop["default"])
    additional = schema.get("additionalProperties")
    for key, child in value.items():
        if key in properties:
            apply_defaults(child, properties[key])
        elif isinstance(additional, dict):
            apply_defaults(child, additional)


# ---- CRDs ----------------------------------------------------------------------------------


def version_schemas(crd: dict[str, Any]) -> dict[str, Schema]:
    """The openAPIV3Schema of each served version of a CustomResourceDefinition (v1)."""
    spec = crd.get("spec") or {}
    out: dict[str, Schema] = {}
    for version in spec.get("versions") or []:
        if not version.get("served", True):
            continue
        schema = (version.get("schema") or {}).get("openAPIV3Schema")
        if schema is None:
            schema = ((spec.get("validation") or {}).get("openAPIV3Schema"))  # one schema for all
        if schema is not None:
            out[version["name"]] = schema
    return out
