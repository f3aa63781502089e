"""Flatten and rebuild nested lists, tuples and dicts (TensorFlow's `tf.nest`).

Lists, tuples (namedtuples included) and dicts are nested; everything else (None,
strings, tensors, sets) is a leaf. Dict entries are visited in sorted key order, as
`tf.nest` does, so a structure and its gradient line up element for element; a
rebuilt dict keeps the key order of the structure it copies.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["flatten", "flatten_with_tuple_paths", "pack_sequence_as", "is_nested",
           "map_structure", "assert_same_structure"]


def is_nested(seq: Any) -> bool:
    """Whether `seq` is a list, tuple or dict (which `flatten` descends into)."""
    return isinstance(seq, (list, tuple, dict))


def _sorted_keys(mapping: dict) -> list:
    try:
        return sorted(mapping)
    except TypeError:
        raise TypeError("nest only supports dicts with sortable keys.") from None


def _children(structure) -> list:
    """(key or index, child) of a nested structure, in flattening order."""
    if isinstance(structure, dict):
        return [(key, structure[key]) for key in _sorted_keys(structure)]
    return list(enumerate(structure))


def flatten(structure: Any, expand_composites: bool = False) -> list:
    """The leaves of `structure` in a fixed order; a non-nested value is its own only
    leaf (`flatten(None) == [None]`, as TensorFlow)."""
    if not isinstance(structure, (list, tuple, dict)):
        return [structure]
    items = [structure[key] for key in _sorted_keys(structure)] \
        if isinstance(structure, dict) else structure
    leaves = []
    for item in items:          # a leaf is taken here: a call per leaf would cost each step
        if isinstance(item, (list, tuple, dict)):
            leaves += flatten(item)
        else:
            leaves.append(item)
    return leaves


def flatten_with_tuple_paths(structure: Any, expand_composites: bool = False) -> list:
    """(path, leaf) pairs in `flatten`'s order; a path is the tuple of indices and keys
    leading to the leaf."""
    if not is_nested(structure):
        return [((), structure)]
    return [((key,) + path, leaf) for key, child in _children(structure)
            for path, leaf in flatten_with_tuple_paths(child)]


def _rebuilt(structure, items: list):
    """A structure like `structure` holding `items` (in flattening order)."""
    if isinstance(structure, dict):
        by_key = dict(zip(_sorted_keys(structure), items))
        rebuilt = type(structure)() if type(structure) is not dict else {}
        if hasattr(structure, "default_factory"):           # collections.defaultdict
            rebuilt.default_factory = structure.default_factory
        for key in structure:                                # the structure's own key order
            rebuilt[key] = by_key[key]
        return rebuilt
    if isinstance(structure, tuple) and hasattr(structure, "_fields"):     # namedtuple
        return type(structure)(*items)
    return type(structure)(items)


def _count(structure) -> int:
    return len(flatten(structure))


def pack_sequence_as(structure: Any, flat_sequence: Sequence[Any],
                     expand_composites: bool = False) -> Any:
    """Rebuild `structure` with its leaves replaced, in order, by `flat_sequence`."""
    if not is_nested(flat_sequence):
        raise TypeError(f"pack_sequence_as: flat_sequence must be a list or tuple, got "
                        f"{type(flat_sequence).__name__}")
    if not is_nested(structure):
        if len(flat_sequence) != 1:
            raise ValueError(f"The target structure is of type `{type(structure)}`\n  "
                             f"{structure!r:.100}\nHowever the input is a sequence "
                             f"({type(flat_sequence)}) of length {len(flat_sequence)}.\n  "
                             f"{flat_sequence!r:.100}\nnest cannot guarantee that it is "
                             "safe to map one to the other.")
        return flat_sequence[0]
    if (type(structure) is list or type(structure) is tuple) and \
            len(structure) == len(flat_sequence) and \
            not any(isinstance(child, (list, tuple, dict)) for child in structure):
        return type(structure)(flat_sequence)       # flat: a step's list of gradients
    atoms = _count(structure)
    if atoms != len(flat_sequence):
        raise ValueError(f"Could not pack sequence. Structure had {atoms} atoms, but "
                         f"flat_sequence had {len(flat_sequence)} items.  Structure: "
                         f"{structure!r:.200}, flat_sequence: {flat_sequence!r:.200}.")
    leaves = iter(flat_sequence)

    def build(s):
        if not is_nested(s):
            return next(leaves)
        return _rebuilt(s, [build(child) for _, child in _children(s)])

    return build(structure)


def _same_type(a, b) -> bool:
    if type(a) is type(b):
        return True
    # namedtuples of the same name and fields match (TensorFlow's rule)
    return all(isinstance(x, tuple) and hasattr(x, "_fields") for x in (a, b)) and \
        type(a).__name__ == type(b).__name__ and a._fields == b._fields


def _mismatch(a, b, check_types) -> tuple[type, str] | None:
    """(exception class, reason) for the first difference of `a` and `b`, or None."""
    if is_nested(a) != is_nested(b):
        nested, other = (a, b) if is_nested(a) else (b, a)
        return ValueError, (f'Substructure "type={type(nested).__name__} str={nested!r:.80}" '
                            f'is a sequence, while substructure "type={type(other).__name__} '
                            f'str={other!r:.80}" is not')
    if not is_nested(a):
        return None
    if check_types and not _same_type(a, b):
        return TypeError, (f"The two structures don't have the same sequence type. First "
                           f"structure has type {type(a).__name__}, while second structure "
                           f"has type {type(b).__name__}.")
    if len(a) != len(b):
        return ValueError, ("The two structures don't have the same number of elements. "
                            f"First structure: {a!r:.80}. Second structure: {b!r:.80}")
    if isinstance(a, dict) and isinstance(b, dict) and set(a) != set(b):
        return ValueError, ("The two dictionaries don't have the same set of keys. First "
                            f"structure has keys {_sorted_keys(a)}, while second structure "
                            f"has keys {_sorted_keys(b)}")
    for (_, x), (_, y) in zip(_children(a), _children(b)):
        found = _mismatch(x, y, check_types)
        if found:
            return found
    return None


def assert_same_structure(nest1: Any, nest2: Any, check_types: bool = True,
                          expand_composites: bool = False) -> None:
    """Raise if `nest1` and `nest2` differ in nesting, lengths or dict keys (ValueError),
    or, with `check_types`, in the type of a sequence (TypeError: a list is not a
    tuple)."""
    found = _mismatch(nest1, nest2, check_types)
    if found:
        error, reason = found
        raise error(f"The two structures don't have the same nested structure.\n\n"
                    f"First structure: type={type(nest1).__name__} str={nest1!r:.200}\n\n"
                    f"Second structure: type={type(nest2).__name__} str={nest2!r:.200}\n\n"
                    f"More specifically: {reason}")


def map_structure(func: Callable, *structure: Any, check_types: bool = True,
                  expand_composites: bool = False) -> Any:
    """`func` applied to corresponding leaves of the structures (which must match, as in
    `assert_same_structure`), packed as the first structure."""
    if not callable(func):
        raise TypeError(f"map_structure: func must be callable, got {func!r:.60}")
    if not structure:
        raise ValueError("Must provide at least one structure")
    for other in structure[1:]:
        assert_same_structure(structure[0], other, check_types=check_types)
    flat = [flatten(s) for s in structure]
    return pack_sequence_as(structure[0], [func(*leaves) for leaves in zip(*flat)])


from .namespaces._names import namespace_getattr as _namespace_getattr  # noqa: E402

# A missing name says what tapec does not implement (tapec/namespaces/_names.py).
__getattr__ = _namespace_getattr(__name__, "nest")
