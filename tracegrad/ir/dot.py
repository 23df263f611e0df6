"""Graphviz DOT text for a graph (no Graphviz install needed to produce it)."""
from .dtypes import aval_str
from .printing import format_params


def _quote(text):
    # labels carry Graphviz's own "\n" line breaks, so only quotes are escaped
    return '"' + str(text).replace('"', '\\"') + '"'


def to_dot(graph) -> str:
    outputs = set(graph.outputs)
    lines = ["digraph tracegrad {", "  rankdir=TB;", "  node [shape=box, fontname=monospace];"]
    for n, d in graph.nx.nodes(data=True):
        aval = aval_str(d["shape"], d["dtype"])
        if d["op"] == "input":
            label, style = f"%{n} input {d['params']['index']}\\n{aval}", "shape=ellipse, color=blue"
        elif d["op"] == "const":
            value = format_params({"value": d["params"]["value"]}, bare=True)
            label, style = f"%{n} const {value}\\n{aval}", "shape=note, color=gray"
        else:
            params = format_params(d["params"])
            label = f"%{n} {d['op']}" + (f" {params}" if params else "") + f"\\n{aval}"
            style = ""
        if d["src"]:
            label += f"\\n{d['src']}"
        if n in outputs:
            style = (style + ", " if style else "") + "penwidth=2, color=red"
        lines.append(f"  n{n} [label={_quote(label)}{', ' + style if style else ''}];")
        for pos, a in enumerate(d["args"]):
            lines.append(f"  n{a} -> n{n} [label={pos}];")
    lines.append("}")
    return "\n".join(lines)
