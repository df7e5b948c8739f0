"""Close matches for a name the user mistyped: the one helper behind every "no kernel / query /
GPU / predictor / column ..." line, so each says what the user most likely meant instead of
the first names in alphabetical order."""

from __future__ import annotations

import difflib
from collections.abc import Iterable

# How many close matches a line names, and how many names it lists when none is close.
SUGGESTED = 3
LISTED = 8
# difflib's similarity ratio (0-1) from which a name counts as close; its own default, 0.6,
# missed 'best_settings' -> 'best_setting' only for much longer names, so it is kept
_CUTOFF = 0.6


def _tail(name: str) -> str:
    """What follows a kernel id's suite (and an app's ':'): 'vectorAdd' of
    'cuda-sdk/vectorAdd:vectorAddKernel' is compared with its parts too."""
    return name.rsplit("/", 1)[-1]


def close_matches(name: str, names: Iterable[str], n: int = SUGGESTED) -> list[str]:
    """Up to ``n`` of ``names`` closest to ``name``, best first: the same name in another case,
    names holding it (a bare kernel name inside 'suite/app:kernel'), then difflib's nearest by
    the whole name or by its part after the last '/' and around ':'. Empty when none is
    close."""
    names = list(dict.fromkeys(names))
    wanted = name.lower()
    found: list[str] = [c for c in names if c.lower() == wanted]
    found += [c for c in names if wanted and wanted in c.lower() and c not in found]
    # compared without the suite on either side: a shared 'suite/' made 'tiny/none' look
    # like 'tiny/mem'
    parts: dict[str, list[str]] = {}
    for candidate in names:
        for part in {_tail(candidate), *_tail(candidate).split(":")}:
            parts.setdefault(part.lower(), []).append(candidate)
    for part in difflib.get_close_matches(_tail(wanted), list(parts), n=n * 3, cutoff=_CUTOFF):
        found += [c for c in parts[part] if c not in found]
    return found[:n]


def listing(names: list[str], limit: int = LISTED) -> str:
    """'a', 'b', ... (N in all): names quoted with repr (a stored name is data), at most
    ``limit`` of them."""
    if not names:
        return "none"
    shown = ", ".join(repr(n) for n in names[:limit])
    return shown + (f", ... ({len(names)} in all)" if len(names) > limit else "")


def hint(name: str, names: list[str], plural: str, see: str = "") -> str:
    """What follows "no X 'name'": '; did you mean 'a' or 'b'?' when some of ``names`` are
    close, else ' (plural: the first LISTED names)'; ``see`` a command listing them all."""
    close = close_matches(name, names)
    if close:
        quoted = [repr(c) for c in close]
        either = quoted[0] if len(quoted) == 1 else f"{', '.join(quoted[:-1])} or {quoted[-1]}"
        return (f"; did you mean {either}?"
                + (f" ({see})" if see else ""))
    return f" ({plural}: {listing(names)}" + (f"; {see})" if see else ")")


def unknown(kind: str, name: str, names: list[str], where: str = "", see: str = "",
            plural: str | None = None) -> str:
    """One line for a ``kind`` (e.g. 'kernel') named ``name`` that is not among ``names``
    (``where``: e.g. ' in this database'), with :func:`hint`'s close matches or listing."""
    return f"no {kind} {name!r}{where}" + hint(name, names, plural or f"{kind}s", see)
