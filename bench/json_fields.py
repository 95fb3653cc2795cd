"""Typed fields of the benchmarks' --json documents (k1_bench, k2_bench), read with errors that say
which field is missing or of the wrong type."""

import json


def json_field(doc: dict, key: str, kind: type, where: str, error: type[ValueError]):
    """doc[key] as `kind` (an int where a float is expected counts; a bool is never an int); raises
    `error` naming `where` and the field otherwise."""
    if key not in doc:
        raise error(f"{where}: no \"{key}\"")
    value = doc[key]
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise error(f"{where}: \"{key}\" is {type(value).__name__}, expected {kind.__name__}")
    return value


def json_object(text: str, where: str, error: type[ValueError]) -> dict:
    """`text` parsed as a JSON object; raises `error` naming `where` when it is not JSON or not an
    object."""
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as err:
        raise error(f"{where}: not JSON: {err}") from err
    if not isinstance(doc, dict):
        raise error(f"{where}: expected an object, got {type(doc).__name__}")
    return doc
