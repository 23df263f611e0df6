"""A picture of a graph with matplotlib alone, for machines without Graphviz.

``graph.render(path, engine="matplotlib")`` draws each node as a box labelled as in
``to_dot``: its id, op and parameters, its type and the user's source line, with small
constants written into their users' labels (``%7 mul(%6, 2.0)``) instead of drawn as
boxes of their own. The colours are ``to_dot``'s: inputs white, constants grey, the
forward part blue, the adjoint part orange, outputs with a red border.

The layout is layered, as Graphviz's ``dot`` does it, in three steps:

1. *Layers*: each node goes one layer below its deepest operand (the longest path from
   a source), so every edge points downward. A constant, or an input of the adjoint
   part (a cotangent seed), sits just above its first user instead of in the top row.
2. An edge that spans several layers is routed through a *waypoint* in each layer it
   crosses, so it bends around the boxes in between instead of cutting across the sheet
   (in a very deep graph, only as many as a budget allows, shortest edges first).
3. *Crossings*: the order inside each layer is improved by barycenter sweeps: going
   down, each node moves to the mean position of its operands in the layer above;
   going up, to the mean position of its users below. The order with the fewest edge
   crossings seen is kept.

Graphviz draws large graphs better still; this keeps a picture one
``pip install matplotlib`` away.
"""
from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

from .dot import (
    ADJOINT_FILL,
    CONST_FILL,
    FORWARD_FILL,
    INPUT_FILL,
    OUTPUT_COLOR,
    adjoint_nodes,
    folded_constants,
    head,
    input_head,
    output_name,
    short_value,
)
from .dtypes import aval_str
from .printing import printable

SWEEPS = 4          # rounds of barycenter sweeps (each one down and one up)
CHAR = 0.062        # inches per character at the labels' font size
LINE = 0.15         # inches per label line
GAP = 0.35          # inches between boxes in a layer
WAYPOINT = 0.25     # inches a waypoint takes in a layer
ROW_GAP = 0.55      # inches between layers
RELAX = 8           # rounds that pull boxes and waypoints toward their neighbours
MAX_PIXELS = 40e6
WAYPOINT_BUDGET = 4000   # waypoints at least (8 a node for larger graphs); see ``layer``


class Layout(NamedTuple):
    """Where everything goes: ``layers`` (per layer, left to right: node ids and
    waypoints ``("via", k, layer)`` of edge ``k``), ``rank`` (node or waypoint -> its
    layer), ``edges`` (``(source, target, path)``: ``path`` runs from the source through
    its waypoints to the target) and ``pos`` (node or waypoint -> ``(x, y)`` in inches,
    filled in by ``place``)."""
    layers: list
    rank: dict
    edges: list
    pos: dict


def _ranks(nodes, preds, lifted) -> dict:
    """Longest-path layers; nodes of ``lifted`` without operands sit just above their
    first user."""
    rank = {}
    for n in nodes:
        rank[n] = max((rank[a] + 1 for a in preds[n]), default=0)
    users: dict = {}
    for n in nodes:
        for a in preds[n]:
            users.setdefault(a, []).append(n)
    for n in reversed(nodes):
        if n in lifted and not preds[n] and users.get(n):
            rank[n] = min(rank[u] for u in users[n]) - 1
    return rank


def layer(nodes, edges, lifted=(), sweeps: int = SWEEPS) -> Layout:
    """The layered layout of a DAG: ``nodes`` in a topological order, ``edges`` pairs
    ``(source, target)`` (repeats are drawn once), at most ``sweeps`` rounds of
    barycenter sweeps (0: each layer in node order). Coordinates are left to ``place``."""
    nodes = list(nodes)
    edges = list(dict.fromkeys(edges))
    preds = {n: [] for n in nodes}
    for a, b in edges:
        preds[b].append(a)
    rank = _ranks(nodes, preds, set(lifted))
    depth = max(rank.values(), default=-1) + 1
    layers = [[] for _ in range(depth)]
    for n in nodes:
        layers[rank[n]].append(n)
    # waypoints for the shortest spans first, within a budget: a deep gradient graph's
    # forward values are read across hundreds of layers, and routing all of those would
    # cost quadratically; the longest edges then run straight
    budget = max(WAYPOINT_BUDGET, 8 * len(nodes))
    routed = set()
    for k in sorted(range(len(edges)), key=lambda k: rank[edges[k][1]] - rank[edges[k][0]]):
        span = rank[edges[k][1]] - rank[edges[k][0]] - 1
        if span > budget:
            break
        budget -= span
        routed.add(k)
    paths = []
    for k, (a, b) in enumerate(edges):
        path = [a]
        for r in range(rank[a] + 1, rank[b]) if k in routed else ():
            via = ("via", k, r)
            rank[via] = r
            layers[r].append(via)
            path.append(via)
        path.append(b)
        paths.append((a, b, path))
    layout = Layout(layers, rank, paths, {})
    _order(layout, sweeps)
    return layout


def _links(layout):
    """The segments between adjacent layers: ``(upper, lower)`` pairs (an edge left
    without waypoints has none)."""
    rank = layout.rank
    return [(p, q) for _, _, path in layout.edges for p, q in zip(path, path[1:])
            if rank[q] == rank[p] + 1]


def crossings(layout: Layout) -> int:
    """How many pairs of segments between adjacent layers cross, with the current order
    of the layers (segments that share an end do not cross)."""
    index = {v: i for row in layout.layers for i, v in enumerate(row)}
    by_layer: dict = {}
    for p, q in _links(layout):
        by_layer.setdefault(layout.rank[p], []).append((index[p], index[q]))
    total = 0
    for segs in by_layer.values():
        # pairs a1 < a2 with b1 > b2: with the segments sorted by (a, b), the inversions
        # of the b's, counted with a Fenwick tree over b (equal a's are sorted by b, so
        # they never count)
        segs.sort()
        size = max(b for _, b in segs) + 2
        tree = [0] * (size + 1)
        for seen, (_, b) in enumerate(segs):
            i, at_most = b + 1, 0          # how many earlier b's are <= b
            while i > 0:
                at_most += tree[i]
                i -= i & -i
            total += seen - at_most
            i = b + 1
            while i <= size:
                tree[i] += 1
                i += i & -i
    return total


def _order(layout: Layout, sweeps: int) -> None:
    """Barycenter sweeps over ``layout.layers`` (in place), keeping the best order."""
    up: dict = {}
    down: dict = {}
    for p, q in _links(layout):
        up.setdefault(q, []).append(p)
        down.setdefault(p, []).append(q)
    best = [list(row) for row in layout.layers]
    fewest = crossings(layout)
    layers = layout.layers

    def sweep(rows, neighbours):
        for r in rows:
            index = {v: i for i, v in enumerate(layers[r - 1 if neighbours is up else r + 1])}
            current = {v: i for i, v in enumerate(layers[r])}

            def key(v, index=index, current=current):
                ns = [index[u] for u in neighbours.get(v, ()) if u in index]
                return sum(ns) / len(ns) if ns else current[v]
            layers[r].sort(key=key)

    for _ in range(sweeps):
        if fewest == 0:
            break
        sweep(range(1, len(layers)), up)
        sweep(range(len(layers) - 2, -1, -1), down)
        count = crossings(layout)
        if count < fewest:
            fewest, best = count, [list(row) for row in layers]
    layers[:] = best


def place(layout: Layout, sizes: dict, rounds: int = RELAX) -> None:
    """Coordinates in inches: layers top to bottom, its boxes (``sizes``: node ->
    (width, height)) and waypoints left to right in their order. Each layer starts
    centred; then ``rounds`` times every box and waypoint moves toward the mean x of
    its neighbours in the layers above and below (so long edges run straight), pushed
    apart where they would overlap."""
    y = 0.0
    xs, ys, widths = {}, {}, {}
    for row in layout.layers:
        widths.update((v, sizes[v][0] if v in sizes else WAYPOINT) for v in row)
        height = max((sizes[v][1] for v in row if v in sizes), default=LINE)
        total = sum(widths[v] for v in row) + GAP * (len(row) - 1)
        x = -total / 2
        for v in row:
            xs[v], ys[v] = x + widths[v] / 2, y - height / 2
            x += widths[v] + GAP
        y -= height + ROW_GAP
    neighbours: dict = {}
    for p, q in _links(layout):
        neighbours.setdefault(p, []).append(q)
        neighbours.setdefault(q, []).append(p)
    for _ in range(rounds):
        for row in layout.layers:
            want = [sum(xs[u] for u in neighbours[v]) / len(neighbours[v])
                    if neighbours.get(v) else xs[v] for v in row]
            sep = [(widths[a] + widths[b]) / 2 + GAP for a, b in zip(row, row[1:])]
            # pushed apart rightward, and leftward; their mean keeps both the order and
            # the spacing (each does, and the constraints are linear)
            right, left = list(want), list(want)
            for i in range(1, len(row)):
                right[i] = max(right[i], right[i - 1] + sep[i - 1])
            for i in range(len(row) - 2, -1, -1):
                left[i] = min(left[i], left[i + 1] - sep[i])
            for v, a, b in zip(row, right, left):
                xs[v] = (a + b) / 2
    for v in xs:
        layout.pos[v] = (xs[v], ys[v])


# -- what is drawn ----------------------------------------------------------------------------
def _labels(graph, adjoint, folded) -> dict:
    outputs = {}
    for i, o in enumerate(graph.outputs):
        outputs.setdefault(o, []).append(output_name(graph, i))
    labels = {}
    for n, d in graph.items():
        if n in folded:
            continue
        if d.op == "input":
            first = input_head(graph, n, d)
        elif d.op == "const":
            first = f"%{n} const {short_value(d.params['value'])}" \
                if d.params["value"].size <= 16 else f"%{n} const"
        else:
            first = head(graph, n, d, folded)
        if n in adjoint and d.op in ("input", "const"):
            first += " (seed)"
        if n in outputs:
            first += f" (output {', '.join(outputs[n])})"
        lines = [first, aval_str(d.shape, d.dtype)]
        if d.src:
            lines.append(printable(d.src))
        labels[n] = "\n".join(line if len(line) <= 60 else line[:57] + "..." for line in lines)
    return labels


def fill_of(graph, n, adjoint) -> str:
    """A box's colour, as ``to_dot`` fills it."""
    if n in adjoint:
        return ADJOINT_FILL
    op = graph.op(n)
    return INPUT_FILL if op == "input" else CONST_FILL if op == "const" else FORWARD_FILL


def graph_layout(graph, forward=None, seeds=None):
    """``(layout, labels, adjoint)`` for ``graph``: what ``draw`` draws."""
    adjoint = adjoint_nodes(graph, forward, seeds)
    folded = folded_constants(graph, adjoint)
    labels = _labels(graph, adjoint, folded)
    nodes = [n for n in graph if n not in folded]
    edges = [(a, n) for n in nodes for a in graph.node(n).args if a not in folded]
    lifted = {n for n in nodes if graph.op(n) == "const" or n in adjoint}
    layout = layer(nodes, edges, lifted)
    sizes = {}
    for n, text in labels.items():
        lines = text.split("\n")
        sizes[n] = (CHAR * max(len(s) for s in lines) + 0.2, LINE * len(lines) + 0.12)
    place(layout, sizes)
    return layout, labels, adjoint


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
    layout, labels, adjoint = graph_layout(graph, forward, seeds)
    outputs = set(graph.outputs)
    pos = layout.pos
    xs = [p[0] for p in pos.values()] or [0.0]
    ys = [p[1] for p in pos.values()] or [0.0]
    half = max((len(max(t.split("\n"), key=len)) * CHAR / 2 for t in labels.values()),
               default=0.5) + 0.2
    width = max(xs) - min(xs) + 2 * half
    height = max(ys) - min(ys) + 1.0
    fig = plt.figure(figsize=(max(3.0, width), max(2.0, height)))
    ax = fig.add_axes((0, 0, 1, 1))
    for _, b, path_ in layout.edges:
        points = [pos[v] for v in path_]
        colour = ADJOINT_EDGE if b in adjoint else "#555555"
        if len(points) > 2:
            ax.plot([p[0] for p in points[:-1]], [p[1] for p in points[:-1]], color=colour,
                    lw=0.8, solid_capstyle="round", zorder=1)
        ax.add_patch(FancyArrowPatch(points[-2], points[-1], arrowstyle="-|>",
                                     mutation_scale=9, shrinkA=0 if len(points) > 2 else 12,
                                     shrinkB=12, color=colour, lw=0.8, zorder=1))
    for n, text in labels.items():
        fill = fill_of(graph, n, adjoint)
        edge = OUTPUT_COLOR if n in outputs else "#333333"
        ax.text(*pos[n], text, ha="center", va="center", fontsize=7, family="monospace",
                zorder=2, bbox=dict(boxstyle="round,pad=0.3", fc=fill, ec=edge,
                                    lw=2.0 if n in outputs else 0.8))
    ax.set_xlim(min(xs) - half, max(xs) + half)
    ax.set_ylim(min(ys) - 0.5, max(ys) + 0.5)
    ax.axis("off")
    path.parent.mkdir(parents=True, exist_ok=True)
    # at most ~40 million pixels: a very large graph is drawn at a lower resolution
    dpi = min(120.0, (MAX_PIXELS / (fig.get_figwidth() * fig.get_figheight())) ** 0.5)
    fig.savefig(path, format=fmt, dpi=dpi)
    plt.close(fig)
    return path


ADJOINT_EDGE = "#c46a1b"     # edges into the adjoint part
