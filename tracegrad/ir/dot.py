"""Graphviz DOT text for a graph (no Graphviz install needed to produce it).

``to_dot(graph)`` draws one box per node, labelled with its id and op, its
parameters, its type (``f64[3,4]``) and the user's source line. Inputs are
ellipses, constants are grey notes, outputs have a double red border; the
forward part of a derived graph is filled light blue and its adjoint (reverse
mode) part light orange, and a legend node says so. The text is deterministic:
the same graph always gives the same bytes.

Which nodes are the adjoint part
--------------------------------
The IR does not record it, so it is worked out from the graph:

* ``forward=`` a :class:`Graph` (the graph that was differentiated): a node is
  forward when it computes the same thing as some node of ``forward`` -- the
  same op and parameters applied to operands that match in turn (inputs match
  by position, constants by value). Everything else that is not an input or a
  constant is adjoint. This works for ``tg.passes.adjoint(g)`` with
  ``forward=g`` and for ``tg.trace(tg.grad(f), x)`` with
  ``forward=tg.trace(f, x)``.
* ``forward=`` a set of node ids: exactly those nodes are forward.
* ``seeds=`` node ids (e.g. the cotangent inputs of ``tg.passes.adjoint(g)``,
  ``graph.inputs[len(g.inputs):]``): the adjoint part is the seeds and every
  node that depends on one.
* Neither given -- the structural rule: the adjoint part is every node that
  depends on a *cotangent seed*, found as it appears in the graphs that
  ``tg.grad``/``tg.hessian`` leave when traced. There the seed is the
  ``np.ones`` cotangent that ``tg.grad`` feeds the adjoint graph, inlined as a
  floating-point ``const`` whose every element is 1, made *before* the forward
  pass is replayed. So a seed is such a constant whose first user is not the
  first non-constant node after it, or is a ``reshape``/``broadcast_to`` (how a
  scalar cotangent is spread back over a reduction). A constant 1 written in
  the user's code is made right where it is used, so it is never a seed.
  Nodes that read no input and only feed the adjoint part (the zeros a
  cotangent is scattered into) count as adjoint too. Graphs with no seed
  (every forward trace) are drawn all forward. A graph
  from ``tg.passes.adjoint`` has no constant seed -- its seeds are inputs, and
  which inputs is not recorded -- so pass ``forward=`` or ``seeds=`` for it.
"""
from __future__ import annotations

import numpy as np

from .dtypes import aval_str
from .printing import format_params, printable

FORWARD_FILL = "#dbe9f6"   # light blue
ADJOINT_FILL = "#fde0c5"   # light orange
CONST_FILL = "#eeeeee"
INPUT_FILL = "#ffffff"
OUTPUT_COLOR = "#c0392b"
MAX_CONST = 16             # constants with more elements are drawn collapsed
FOLD_SIZE = 4              # constants with at most this many elements are written into
                           # their users' labels instead of drawn as nodes of their own
ADJOINT_MARK = "adjoint"   # the node attribute tg.passes.adjoint sets on its adjoint part
NAME = "name"              # the node attribute naming a user's argument or gradient
_PREVIEW = 4               # values shown for a collapsed constant
_SPREAD = ("reshape", "broadcast_to")
_FORWARD_USERS = ("select",)


def escape(text) -> str:
    """``text`` as the inside of a DOT quoted string: backslashes and quotes are
    escaped, line breaks become Graphviz's ``\\n`` and other control characters their
    escapes (``printable``)."""
    text = str(text).replace("\\", "\\\\").replace('"', '\\"')
    text = text.replace("\r\n", "\\n").replace("\n", "\\n").replace("\r", "\\n")
    return printable(text)


def _label(lines) -> str:
    # each line is escaped on its own, then joined with Graphviz's line break
    return '"' + "\\n".join(escape(line) for line in lines) + '"'


def _const_text(value: np.ndarray, max_const: int) -> str:
    if value.size <= max_const:
        body = np.array2string(value, separator=",", precision=6, threshold=value.size + 1,
                               max_line_width=10**9)
        return "const " + body.replace("\n", "").replace(" ", "")
    flat = value.reshape(-1)[:_PREVIEW]
    if value.dtype.kind == "f":
        shown = ", ".join(np.format_float_positional(v, precision=4, trim="-") for v in flat)
    else:
        shown = ", ".join(str(v) for v in flat.tolist())
    return (f"const {aval_str(value.shape, value.dtype)} ({value.size} values)\n"
            f"[{shown}, ...]")


# -- which nodes are adjoint ------------------------------------------------------------------
def _dependents(graph, roots) -> set:
    """``roots`` and every node that depends on one (nodes are in topological order)."""
    marked = set(roots)
    for n, d in graph.items():
        if n not in marked and any(a in marked for a in d["args"]):
            marked.add(n)
    return marked


def find_seeds(graph) -> list:
    """The constant cotangent seeds of a traced gradient graph (see the module docstring)."""
    order = list(graph)
    position = {n: i for i, n in enumerate(order)}
    # the first node that is not a constant after each position
    next_ops, following = [None] * len(order), None
    for i in range(len(order) - 1, -1, -1):
        next_ops[i] = following
        if graph.op(order[i]) != "const":
            following = order[i]
    seeds = []
    for i, n in enumerate(order):
        d = graph.node(n)
        if d["op"] != "const":
            continue
        value = np.asarray(d["params"]["value"])
        if value.dtype.kind != "f" or value.size == 0 or not np.all(value == 1):
            continue
        users = graph.users(n)
        if not users:
            continue
        first_user = min(users, key=position.__getitem__)
        next_op = next_ops[i]
        # (a gradient replayed from a cached plan has its constants in front: a select's
        # 1.0 there is the forward's np.where(c, 1.0, 0.0), not a seed)
        if graph.op(first_user) in _SPREAD or (
                first_user != next_op and graph.op(first_user) not in _FORWARD_USERS):
            seeds.append(n)
    return seeds


def _key(d, keys):
    if d["op"] == "input":
        return ("input", d["params"]["index"], tuple(d["shape"]), d["dtype"])
    if d["op"] == "const":
        v = np.asarray(d["params"]["value"])
        return ("const", v.dtype.str, v.shape, v.tobytes())
    params = tuple((k, format_params({k: v})) for k, v in d["params"].items())
    return (d["op"], params, tuple(d["shape"]), d["dtype"], tuple(keys[a] for a in d["args"]))


def _structural_keys(graph) -> dict:
    keys = {}
    for n, d in graph.items():
        keys[n] = _key(d, keys)
    return keys


def marked_adjoint(graph) -> set:
    """The nodes ``tg.passes.adjoint`` marked as its adjoint part (the node attribute
    ``adjoint``, kept by the passes that copy nodes), and every node depending on one."""
    marked = {n for n, d in graph.items() if d.get(ADJOINT_MARK)}
    return _dependents(graph, marked) if marked else marked


def adjoint_nodes(graph, forward=None, seeds=None) -> set:
    """The node ids drawn as the adjoint part (the rules are in the module docstring)."""
    if forward is None and seeds is None:
        marked = marked_adjoint(graph)
        if marked:
            return marked
    structural = set()
    if forward is not None and hasattr(forward, "nx"):
        known = set(_structural_keys(forward).values())
        keys = _structural_keys(graph)
        structural = {n for n in graph if keys[n] not in known
                      and graph.op(n) not in ("input", "const")}
        extra = graph.inputs[len(forward.inputs):]
        if seeds is None and extra:
            seeds = extra
    elif forward is not None:
        forward = set(forward)
        structural = {n for n in graph if n not in forward
                      and graph.op(n) not in ("input", "const")}
        if seeds is None:
            return structural
    if seeds is None:
        seeds = find_seeds(graph)
    adjoint = structural | _dependents(graph, seeds)
    # scaffolding that reads no input and only feeds the adjoint part (the zeros a
    # cotangent is scattered into) belongs to it
    reads_input = _dependents(graph, graph.inputs)
    outputs = set(graph.outputs)
    for n in reversed(list(graph)):
        users = graph.users(n)
        if (n not in adjoint and n not in reads_input and n not in outputs and users
                and graph.op(n) not in ("input", "const") and all(u in adjoint for u in users)):
            adjoint.add(n)
    return adjoint


# -- folded constants and labels ----------------------------------------------------------------
def short_value(value) -> str:
    """A small constant as written in a user's label: ``2.0``, ``-1``, ``[1.0, 2.0]``."""
    v = np.asarray(value)
    if v.ndim == 0:
        return printable(str(v[()]))
    body = np.array2string(v, separator=", ", threshold=v.size + 1, max_line_width=10**9,
                           formatter={"float_kind": lambda x: str(np.float64(x))
                                      if v.dtype == np.float64 else str(x)})
    return printable(" ".join(body.split()))


def folded_constants(graph, adjoint=(), fold: int = FOLD_SIZE) -> set:
    """The constants drawn inside their users' labels: at most ``fold`` elements, used by
    some node, neither an output nor a cotangent seed (those keep a node of their own)."""
    outputs = set(graph.outputs)
    folded = set()
    for n, d in graph.items():
        if d.op == "const" and n not in outputs and n not in adjoint and \
                np.asarray(d.params["value"]).size <= fold and graph.users(n):
            folded.add(n)
    return folded


def name_of(graph, n) -> str:
    """How a label refers to node ``n``: the user's name for it where one is recorded
    (the node attribute ``name`` ``tg.trace`` sets: an argument ``w``, a gradient
    ``dw``), else ``%n``."""
    name = graph.node(n).get(NAME)
    return printable(name) if isinstance(name, str) and name else f"%{n}"


def head(graph, n, d, folded) -> str:
    """The first line of an operation's label: ``%18 mul(%8, 2.0)`` when an operand is a
    folded constant (its value written in), else ``%18 mul``; then its parameters."""
    text = f"%{n} {d.op}"
    if any(a in folded for a in d.args):
        text += "(" + ", ".join(short_value(graph.node(a).params["value"]) if a in folded
                                else name_of(graph, a) for a in d.args) + ")"
    params = format_params({k: v for k, v in d.params.items() if not hasattr(v, "nx")})
    return text + (f" {params}" if params else "")


def output_name(graph, i) -> str:
    """Output ``i`` as a label says it: its index, and the name of its node where one is
    recorded (``0: dw``)."""
    name = name_of(graph, graph.outputs[i])
    return f"{i}: {name}" if name != f"%{graph.outputs[i]}" else str(i)


def input_head(graph, n, d) -> str:
    name = name_of(graph, n)
    index = d.params["index"]
    return f"%{n} {name} (input {index})" if name != f"%{n}" else f"%{n} input {index}"


# -- the text ---------------------------------------------------------------------------------
def to_dot(graph, forward=None, *, seeds=None, max_const: int = MAX_CONST,
           legend: bool = True, fold: int = FOLD_SIZE) -> str:
    """Graphviz DOT source for ``graph`` (see the module docstring for the styling and the
    rule that tells the adjoint part from the forward part).

    ``max_const``: constants with more elements than this show their type, size and
    first few values instead of every value. ``fold``: constants with at most this many
    elements (default 4) get no node: their value is written into each user's label
    (``%7 mul(%6, 2.0)``); ``fold=0`` draws every constant. ``legend=False`` leaves out
    the legend.
    """
    outputs = set(graph.outputs)
    adjoint = adjoint_nodes(graph, forward, seeds)
    folded = folded_constants(graph, adjoint, min(fold, max_const))
    drawn = {}          # id(sub-graph) -> its cluster's name prefix
    lines = ["digraph tracegrad {", "  rankdir=TB;",
             '  node [shape=box, style="rounded,filled", fontname=monospace, fontsize=10];',
             "  edge [fontname=monospace, fontsize=9];"]
    # a multi-output node is drawn as one box listing its outputs (``proj`` nodes are not
    # drawn: an edge from one leaves the box, labelled with the output's id)
    groups = graph.output_groups()
    head_of = {p: h for h, ps in groups.items() for p in ps if p is not None}
    for n, d in graph.items():
        if n in head_of or n in folded:
            continue
        aval = aval_str(d["shape"], d["dtype"])
        if n in groups:
            aval = ", ".join("_" if p is None else
                             f"%{p}:{aval_str(graph.node(p)['shape'], graph.node(p)['dtype'])}"
                             for p in groups[n])
        op = d["op"]
        if op == "input":
            text = [input_head(graph, n, d), aval]
            style = ["shape=ellipse", "style=filled", f'fillcolor="{INPUT_FILL}"']
        elif op == "const":
            body = _const_text(np.asarray(d["params"]["value"]), max_const)
            text = [f"%{n} {body.splitlines()[0]}", *body.splitlines()[1:]]
            if np.asarray(d["params"]["value"]).size <= max_const:
                text.append(aval)
            style = ["shape=note", f'fillcolor="{CONST_FILL}"', "color=gray40"]
        else:
            text = [head(graph, n, d, folded), aval]
            fill = ADJOINT_FILL if n in adjoint else FORWARD_FILL
            style = [f'fillcolor="{fill}"']
        if n in adjoint and op in ("input", "const"):  # a cotangent seed
            style = [s for s in style if not s.startswith("fillcolor")]
            style.append(f'fillcolor="{ADJOINT_FILL}"')
            text[0] += " (seed)"
        if d["src"]:
            text.append(d["src"])
        mine = {n, *(p for p in groups.get(n, ()) if p is not None)}
        if mine & outputs:
            where = ", ".join(output_name(graph, i) for i, o in enumerate(graph.outputs)
                              if o in mine)
            text[0] += f" (output {where})"
            style += ["peripheries=2", f'color="{OUTPUT_COLOR}"', "penwidth=1.5"]
        lines.append(f"  n{n} [label={_label(text)}, {', '.join(style)}];")
        args = d["args"]
        for pos, a in enumerate(args):
            if a in folded:         # written into the label
                continue
            if a in head_of:        # an output of a multi-output node
                label = f"%{a}" + (f" ({pos})" if len(args) > 1 else "")
                lines.append(f"  n{head_of[a]} -> n{n} [label={_label([label])}];")
            else:
                lines.append(f"  n{a} -> n{n}" + (f" [label={pos}];" if len(args) > 1 else ";"))
        for key, sub in d["params"].items():
            if hasattr(sub, "nx") and hasattr(sub, "inputs"):
                if id(sub) in drawn:        # a sub-graph held by several nodes: drawn once
                    lines += [f"  {drawn[id(sub)]}_{o} -> n{n} [style=dashed, color=gray50];"
                              for o in dict.fromkeys(sub.outputs)]
                else:
                    drawn[id(sub)] = f"n{n}_{key}"
                    lines += _cluster(sub, f"n{n}_{key}", f"%{n} {key}", f"n{n}", max_const)
    if legend:
        lines += _legend(graph, adjoint)
    lines.append("}")
    return "\n".join(lines)


def _cluster(graph, prefix, title, parent, max_const, indent="  ") -> list:
    """A sub-graph (a loop body, a cond branch, a checkpointed function) drawn as a
    cluster beside the node holding it; dashed edges lead from its outputs to that node."""
    lines = [f"{indent}subgraph cluster_{prefix} {{",
             f"{indent}  label={_label([title])}; style=dashed; color=gray50;"]
    for n, d in graph.items():
        op = d["op"]
        aval = aval_str(d["shape"], d["dtype"])
        if op == "input":
            text, style = [f"%{n} input {d['params']['index']}", aval], "shape=ellipse"
        elif op == "const":
            body = _const_text(np.asarray(d["params"]["value"]), max_const)
            text, style = [f"%{n} {body.splitlines()[0]}", aval], f'fillcolor="{CONST_FILL}"'
        else:
            params = format_params({k: v for k, v in d["params"].items()
                                    if not hasattr(v, "nx")})
            text = [f"%{n} {op}" + (f" {params}" if params else ""), aval]
            style = f'fillcolor="{FORWARD_FILL}"'
        lines.append(f"{indent}  {prefix}_{n} [label={_label(text)}, {style}];")
        for a in d["args"]:
            lines.append(f"{indent}  {prefix}_{a} -> {prefix}_{n};")
        for key, sub in d["params"].items():
            if hasattr(sub, "nx") and hasattr(sub, "inputs"):
                lines += _cluster(sub, f"{prefix}_{n}_{key}", f"%{n} {key}", f"{prefix}_{n}",
                                  max_const, indent + "  ")
    lines.append(f"{indent}}}")
    for o in dict.fromkeys(graph.outputs):
        lines.append(f"{indent}{prefix}_{o} -> {parent} [style=dashed, color=gray50];")
    return lines


def _legend(graph, adjoint) -> list:
    rows = [("input", f'shape=ellipse, style=filled, fillcolor="{INPUT_FILL}"'),
            ("constant", f'shape=note, fillcolor="{CONST_FILL}", color=gray40'),
            ("forward", f'fillcolor="{FORWARD_FILL}"')]
    if adjoint:
        rows.append(("adjoint (reverse mode)", f'fillcolor="{ADJOINT_FILL}"'))
    rows.append(("output", f'fillcolor="{FORWARD_FILL}", peripheries=2, color="{OUTPUT_COLOR}"'))
    out = ["  subgraph cluster_legend {", '    label="legend"; fontname=monospace; fontsize=10;',
           "    color=gray70;"]
    for i, (text, style) in enumerate(rows):
        out.append(f"    legend{i} [label={_label([text])}, {style}];")
    # one row, no edges: the legend adds nothing to the graph's edge count
    out.append("    {rank=same; " + " ".join(f"legend{i};" for i in range(len(rows))) + "}")
    out.append("  }")
    return out
