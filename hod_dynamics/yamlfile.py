"""Configuration mappings from YAML: a file, YAML text, or an already parsed mapping."""

import os


def read_mapping(source, error, what):
    """The mapping held by ``source``: a dict (returned as is), a path to a YAML file, or YAML
    text (a string that is not a file and contains ':' or '{'). Raises ``error`` (an exception
    class of :mod:`hod_dynamics.errors`) naming ``what`` when the file cannot be read, the YAML
    is malformed, or it does not hold a mapping."""
    import yaml

    if isinstance(source, dict):
        return source
    if not isinstance(source, (str, os.PathLike)):
        raise error(f"{what} must be a mapping, a YAML file or YAML text, got {type(source).__name__}")
    text, origin = source, "YAML text"
    if os.path.isfile(source):
        origin = f"file {os.fspath(source)}"
        try:
            with open(source, encoding="utf-8") as fh:
                text = fh.read()
        except OSError as exc:
            raise error(f"{what}: cannot read {origin}: {exc}") from None
    elif isinstance(source, os.PathLike) or not any(c in source for c in ":{"):
        raise error(f"{what}: no such file '{os.fspath(source)}'")
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise error(f"{what}: malformed YAML in {origin}: {' '.join(str(exc).split())}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise error(f"{what}: {origin} must hold a mapping, got {type(data).__name__}")
    return data
