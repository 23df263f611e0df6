"""``Graph.render``: a picture of a graph through Graphviz.

Two things are needed: the ``graphviz`` Python package (the ``viz`` extra:
``pip install "tracegrad[viz]"``) and Graphviz's ``dot`` program, which is a
system package (``apt install graphviz``, ``brew install graphviz``,
``conda install graphviz``). When either is missing, ``render`` raises
:class:`GraphvizUnavailable`, whose message names what to install. It is both an
``ImportError`` and a ``RuntimeError``, so ``except ImportError`` (the package is
missing) and ``except RuntimeError`` (as ``graphviz.ExecutableNotFound`` is) both
catch it. ``graph.to_dot()`` needs neither.
"""
from __future__ import annotations

from pathlib import Path

from .unavailable import GraphvizUnavailable

FORMATS = ("svg", "png", "pdf")

INSTALL_HINT = ('install the Python package with: pip install "tracegrad[viz]" '
                "(or pip install graphviz), and the Graphviz programs with your system's "
                "package manager: apt install graphviz / brew install graphviz / "
                "conda install graphviz")


def _format_of(path: Path, format) -> str:  # noqa: A002
    fmt = (format or path.suffix.lstrip(".")).lower()
    if not fmt:
        raise ValueError(f"cannot tell the image format of {str(path)!r}: give it a suffix "
                         f"({', '.join('.' + f for f in FORMATS)}) or pass format=")
    if fmt not in FORMATS:
        raise ValueError(f"unsupported image format {fmt!r}; use one of {', '.join(FORMATS)}")
    return fmt


def render(graph, path, format=None, engine="graphviz", **to_dot_args) -> Path:  # noqa: A002
    """Write ``graph``'s drawing to ``path`` (SVG, PNG or PDF; from the suffix unless
    ``format`` is given) and return the path. ``to_dot_args`` go to ``Graph.to_dot``.
    ``engine="matplotlib"`` draws without Graphviz (see ``draw.py``)."""
    path = Path(path)
    fmt = _format_of(path, format)
    if engine == "matplotlib":
        from .draw import draw
        return draw(graph, path, fmt, forward=to_dot_args.get("forward"),
                    seeds=to_dot_args.get("seeds"))
    if engine != "graphviz":
        raise ValueError(f"unknown engine {engine!r}; use 'graphviz' or 'matplotlib'")
    source = graph.to_dot(**to_dot_args)
    try:
        import graphviz
    except ImportError as e:
        raise GraphvizUnavailable(
            f"graph.render needs the graphviz Python package, which is not installed: "
            f"{INSTALL_HINT}. graph.to_dot() gives the DOT text without it.") from e
    try:
        data = graphviz.Source(source, format=fmt).pipe(format=fmt)
    except graphviz.ExecutableNotFound as e:
        raise GraphvizUnavailable(
            f"graph.render needs Graphviz's 'dot' program, which is not on PATH: "
            f"{INSTALL_HINT}. graph.to_dot() gives the DOT text without it, and "
            f"graph.render(path, engine='matplotlib') a simpler picture.") from e
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path
