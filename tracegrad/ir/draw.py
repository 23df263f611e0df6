"""A picture of a graph with matplotlib alone, for machines without Graphviz.

``graph.render(path, engine="matplotlib")`` lays the nodes out in rows by
topological generation (inputs and constants on top, outputs at the bottom) and
draws each as a box with the same colours as ``to_dot``: inputs white, constants
grey, the forward part blue, the adjoint part orange, outputs with a red border.
Graphviz draws larger graphs better; this keeps a picture one ``pip install
matplotlib`` away.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from .dot import ADJOINT_FILL, CONST_FILL, FORWARD_FILL, INPUT_FILL, OUTPUT_COLOR, adjoint_nodes
from .dtypes import aval_str


def _label(graph, n, d):
    op = d["op"]
    head = f"%{n} {op}" if op != "input" else f"%{n} input {d['params']['index']}"
    return f"{head}\n{aval_str(d['shape'], d['dtype'])}"


def draw(graph, path: Path, fmt: str, forward=None, seeds=None) -> Path:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.patches import FancyArrowPatch
    except ImportError as e:
        from .unavailable import GraphvizUnavailable
        raise GraphvizUnavailable('engine="matplotlib" needs matplotlib: pip install matplotlib '
                                  '(or pip install "tracegrad[demo]")') from e
    adjoint = adjoint_nodes(graph, forward, seeds)
    outputs = set(graph.outputs)
    levels = graph.levels()
    rows = [sorted(n for n in levels if levels[n] == k) for k in range(max(levels.values()) + 1)]
    width = max(len(r) for r in rows)
    pos = {}
    for y, row in enumerate(rows):
        for x, n in enumerate(row):
            pos[n] = ((x - (len(row) - 1) / 2) * 2.2, -y * 1.3)
    fig, ax = plt.subplots(figsize=(max(4.0, 2.3 * width), max(3.0, 1.3 * len(rows))))
    for n, d in graph.items():
        for a in d["args"]:
            ax.add_patch(FancyArrowPatch(pos[a], pos[n], arrowstyle="-|>", mutation_scale=10,
                                         shrinkA=14, shrinkB=14, color="#555555", lw=0.8))
    for n, d in graph.items():
        op = d["op"]
        fill = (INPUT_FILL if op == "input" else CONST_FILL if op == "const" else
                ADJOINT_FILL if n in adjoint else FORWARD_FILL)
        if op in ("input", "const") and n in adjoint:
            fill = ADJOINT_FILL
        edge = OUTPUT_COLOR if n in outputs else "#333333"
        ax.text(*pos[n], _label(graph, n, d), ha="center", va="center", fontsize=7,
                family="monospace", bbox=dict(boxstyle="round,pad=0.35", fc=fill, ec=edge,
                                              lw=2.0 if n in outputs else 0.8))
    xs = np.array([p[0] for p in pos.values()])
    ys = np.array([p[1] for p in pos.values()])
    ax.set_xlim(xs.min() - 1.5, xs.max() + 1.5)
    ax.set_ylim(ys.min() - 0.8, ys.max() + 0.8)
    ax.axis("off")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, format=fmt, dpi=120)
    plt.close(fig)
    return path
