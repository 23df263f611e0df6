"""Real PyTorch programs run three ways: PyTorch eager, tracegrad eager, tracegrad compiled.

    git clone https://github.com/pytorch/examples /tmp/pt-examples
    git clone https://github.com/pytorch/tutorials /tmp/pt-tutorials
    python benchmarks/torch_programs.py --examples /tmp/pt-examples \\
        --tutorials /tmp/pt-tutorials --clock cpu                     # every program
    python benchmarks/torch_programs.py --examples /tmp/pt-examples dynamic_net --steps 20

The programs are read from the checkouts given (nothing of them is copied into this
repository): ``time_sequence_prediction`` (two LSTMCells unrolled over 999 steps, LBFGS)
and ``word_language_model`` (2-layer LSTM, small config) from pytorch/examples; the
BiLSTM-CRF (``beginner_source/nlp/advanced_tutorial.py``), the Legendre custom
``autograd.Function`` fit (``examples_autograd/polynomial_custom_function.py``) and
``dynamic_net`` (``examples_nn/dynamic_net.py``) from pytorch/tutorials. A program whose
checkout is not given is listed as skipped.

Each program runs in a fresh process, in a scratch copy of its folder, three ways:

- ``torch``: real PyTorch (one thread);
- ``tg``: the same source with ``import torch`` resolved to tracegrad (``torch``,
  ``torch.nn``, ``torch.optim``, ... are tracegrad's modules in ``sys.modules``);
- ``tgc``: as ``tg``, with ``torch.compile`` added the way a user adds it: one or two
  lines of the program's text are changed at load time (``COMPILE`` below, e.g.
  ``seq = torch.compile(seq)`` after the model is built). What is compiled is the model or
  the function the training loop calls, not the loop: ``loss.backward()`` and the update
  run outside, through the compiled forward's ``CompiledFunctionBackward``.

A "step" is one ``loss.backward()`` call (for LBFGS: one closure evaluation; for the
others one training iteration). Each run stops after ``--steps`` of them (a
``BaseException`` raised from the next ``backward``). The loss of every step and the
program's parameters at the stop are recorded; compared are

- tracegrad eager against PyTorch: the first 5 losses to ``--rtol`` (default 1e-5,
  float32 programs: rounding, not bits), every loss and the parameters after the last
  step to 1e-3 of the largest entry (rounding differences grow over steps: the
  word_language_model's SGD at lr 20 multiplies them);
- tracegrad compiled against tracegrad eager: bit for bit (``bits``), else as above.

Time per step is the CPU time (``--clock cpu``, ``time.process_time``) or wall time
between the ends of the first ``WARMUP`` steps (2: a compiled function runs its first
call eagerly and captures on its second) and of the last, over those steps. For the
compiled run the report also gives each compiled function's graphs, capture times, graph
breaks and their reasons, from its ``.explain()``.

Deviations from the programs as shipped, the same for all three ways: matplotlib draws
nothing (Agg, ``savefig`` skipped); ``torch.load`` defaults to ``weights_only=False``
(``time_sequence_prediction`` loads a pickled NumPy array, which PyTorch >= 2.6 refuses
by default); the BiLSTM-CRF's two concatenations of 0-d tensors get ``.view(1)`` (as
upstream later fixed them; PyTorch itself refuses the stored text); Python's ``random``
and the torch generator are seeded (``dynamic_net`` seeds neither);
``word_language_model`` runs on a synthetic corpus written into its data folder (a
fixed-seed Zipf-like text, 300 words) with a small model (``argv`` in ``PROGRAMS``).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WARMUP = 2
STRICT = 5      # the first losses, held to --rtol
DRIFT = 1e-3    # every loss and the parameters after --steps, relative to the largest


def _wlm_corpus(folder: Path, steps: int, bptt: int = 20, batch: int = 10):
    """A synthetic corpus for word_language_model: enough tokens for ``steps + 4`` batches."""
    rng = random.Random(0)
    vocab = [f"w{k}" for k in range(300)]
    weights = [1.0 / (k + 1) for k in range(len(vocab))]
    data = folder / "data" / "wikitext-2"
    data.mkdir(parents=True, exist_ok=True)
    for name, tokens in (("train", (steps + 4) * bptt * batch), ("valid", 400), ("test", 400)):
        lines, n = [], 0
        while n < tokens:
            words = rng.choices(vocab, weights, k=rng.randint(5, 25))
            lines.append(" " + " ".join(words) + " ")
            n += len(words) + 1
        (data / f"{name}.txt").write_text("\n".join(lines) + "\n")


# name -> where it lives, how it runs, how torch.compile is added, where its parameters are
PROGRAMS = {
    "time_sequence_prediction": dict(
        checkout="examples", folder="time_sequence_prediction", script="train.py",
        before=["generate_sine_wave.py"], argv=["--steps", "{outer}"],
        compile=[("    seq.double()\n", "    seq.double()\n    seq = torch.compile(seq)\n")],
        params="list(seq.parameters())"),
    "word_language_model": dict(
        checkout="examples", folder="word_language_model", script="main.py",
        argv=["--emsize", "32", "--nhid", "32", "--nlayers", "2", "--bptt", "20",
              "--batch_size", "10", "--epochs", "1", "--log-interval", "100000",
              "--save", "model.pt"],
        data=_wlm_corpus,
        compile=[("args.dropout, args.tied).to(device)\n",
                  "args.dropout, args.tied).to(device)\n    model = torch.compile(model)\n")],
        params="list(model.parameters())"),
    "bilstm_crf": dict(
        checkout="tutorials", folder="beginner_source/nlp", script="advanced_tutorial.py",
        # the tutorial as stored concatenates 0-d tensors, which PyTorch refuses since 0.4
        # ("zero-dimensional tensor cannot be concatenated"); upstream's later fix
        fixes=[("alphas_t.append(log_sum_exp(next_tag_var))\n",
                "alphas_t.append(log_sum_exp(next_tag_var).view(1))\n"),
               ("viterbivars_t.append(next_tag_var[0][best_tag_id])\n",
                "viterbivars_t.append(next_tag_var[0][best_tag_id].view(1))\n")],
        compile=[("optimizer = optim.SGD(model.parameters(), lr=0.01, weight_decay=1e-4)\n",
                  "optimizer = optim.SGD(model.parameters(), lr=0.01, weight_decay=1e-4)\n"
                  "model.neg_log_likelihood = torch.compile(model.neg_log_likelihood)\n")],
        params="list(model.parameters())"),
    "legendre_custom_function": dict(
        checkout="tutorials", folder="beginner_source/examples_autograd",
        script="polynomial_custom_function.py",
        compile=[("for t in range(2000):\n",
                  "P3_compiled = torch.compile(LegendrePolynomial3.apply)\nfor t in range(2000):\n"),
                 ("    P3 = LegendrePolynomial3.apply\n", "    P3 = P3_compiled\n")],
        params="[a, b, c, d]"),
    "dynamic_net": dict(
        checkout="tutorials", folder="beginner_source/examples_nn", script="dynamic_net.py",
        compile=[("model = DynamicNet()\n", "model = DynamicNet()\nmodel = torch.compile(model)\n")],
        params="list(model.parameters())"),
}


class Enough(BaseException):
    """Raised from the backward call after the last step (not an ``Exception``, so that a
    program's own ``except Exception`` does not swallow it)."""


# -- one run (a child process) ---------------------------------------------------------------
def _install_tracegrad():
    sys.path.insert(0, str(ROOT))
    import tracegrad  # noqa: I001 - the package first, then its submodules
    import tracegrad.autograd  # noqa: F401
    import tracegrad.nn.functional  # noqa: F401
    import tracegrad.nn.utils  # noqa: F401
    import tracegrad.optim  # noqa: F401
    sys.modules["torch"] = tracegrad
    for key, mod in list(sys.modules.items()):
        if key.startswith("tracegrad."):
            sys.modules.setdefault("torch." + key[len("tracegrad."):], mod)
    return tracegrad


def _digest(arrays):
    import numpy as np
    h = hashlib.sha1()
    for a in arrays:
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()


def _child(name, mode, folder, steps, clock):
    spec = PROGRAMS[name]
    os.environ.setdefault("MPLBACKEND", "Agg")
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        for attr in ("show", "pause", "draw", "ion", "savefig"):
            setattr(plt, attr, lambda *a, **k: None)
    except ImportError:
        pass
    if mode == "torch":
        import torch
        torch.set_num_threads(1)
    else:
        torch = _install_tracegrad()
    import numpy as np

    tick = time.process_time if clock == "cpu" else time.perf_counter
    load = torch.load

    def load_unsafe(*a, **k):
        k.setdefault("weights_only", False)
        return load(*a, **k)
    torch.load = load_unsafe

    compiled = []
    if mode == "tgc":
        original_compile = torch.compile

        def recording_compile(*a, **k):
            out = original_compile(*a, **k)
            compiled.append(out)
            return out
        torch.compile = recording_compile

    losses, times = [], []
    backward = torch.Tensor.backward

    def counted_backward(self, *a, **k):
        if len(losses) >= steps:
            times.append(tick())
            raise Enough
        losses.append(float(self.detach().reshape(-1)[0]))
        if len(losses) == WARMUP + 1:
            times.append(tick())
        return backward(self, *a, **k)
    torch.Tensor.backward = counted_backward

    random.seed(0)              # dynamic_net draws its depth from Python's random module
    torch.manual_seed(0)        # and its parameters unseeded
    os.chdir(folder)
    sys.path.insert(0, folder)
    for pre in spec.get("before", ()):
        sys.argv = [pre]
        exec(compile(Path(pre).read_text(), pre, "exec"), {"__name__": "__main__"})
    source = Path(spec["script"]).read_text()
    for old, new in spec.get("fixes", ()):      # every mode, where the text is still old
        source = source.replace(old, new, 1)
    if mode == "tgc":
        for old, new in spec["compile"]:
            if old not in source:
                raise SystemExit(f"@@ERROR@@ the line to compile is not in {spec['script']}: {old!r}")
            source = source.replace(old, new, 1)
    outer = max(1, -(-steps // 20))    # LBFGS steps: up to 20 evaluations each
    sys.argv = [spec["script"]] + [a.format(outer=outer) for a in spec.get("argv", ())]
    namespace = {"__name__": "__main__", "__file__": os.path.abspath(spec["script"])}
    error = None
    try:
        exec(compile(source, os.path.abspath(spec["script"]), "exec"), namespace)
    except Enough:
        pass
    except Exception as e:  # noqa: BLE001 - reported, not raised
        import traceback
        tb = traceback.extract_tb(e.__traceback__)
        error = f"{type(e).__name__}: {str(e)[:300]} (at {tb[-1].filename}:{tb[-1].lineno})"
    torch.Tensor.backward = backward
    result = {"losses": losses, "error": error, "steps": len(losses)}
    if len(times) == 2 and len(losses) > WARMUP:
        result["ms_per_step"] = (times[1] - times[0]) / (len(losses) - WARMUP) * 1e3
    if error is None:
        params = [np.array(p.detach().numpy(), dtype=np.float64)
                  for p in eval(spec["params"], namespace)]
        result["params"] = [p.ravel().tolist() for p in params]
        result["digest"] = _digest(params)
    reports = []
    for c in compiled:
        try:
            ex = c.explain()
        except Exception as e:  # noqa: BLE001
            reports.append({"error": f"explain(): {type(e).__name__}: {e}"})
            continue
        reports.append({"name": ex.name, "graphs": ex.graph_count,
                        "nodes": [len(g) for g in ex.graphs],
                        "capture_s": list(ex.capture_seconds),
                        "breaks": list(ex.break_reasons),
                        "recompiles": list(ex.recompile_reasons)})
    result["compiled"] = reports
    print("\n@@RESULT@@" + json.dumps(result))


def _run(name, mode, checkout, steps, clock, timeout):
    spec = PROGRAMS[name]
    scratch = Path(tempfile.mkdtemp(prefix=f"tg-{name}-"))
    try:
        work = scratch / Path(spec["folder"]).name
        shutil.copytree(Path(checkout) / spec["folder"], work,
                        ignore=shutil.ignore_patterns("*.pt", "__pycache__"))
        if "data" in spec:
            spec["data"](work, steps)
        env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1",
                   MKL_NUM_THREADS="1", MPLBACKEND="Agg")
        try:
            proc = subprocess.run([sys.executable, __file__, "--child", name, mode, str(work),
                                   str(steps), clock], capture_output=True, text=True,
                                  timeout=timeout, env=env, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            return {"error": f"timed out after {timeout} s"}
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    for marker in ("@@RESULT@@", "@@ERROR@@"):
        at = proc.stdout.rfind(marker) if marker == "@@RESULT@@" else proc.stderr.rfind(marker)
        if at >= 0 and marker == "@@RESULT@@":
            return json.loads(proc.stdout[at + len(marker):])
        if at >= 0:
            return {"error": proc.stderr[at + len(marker):].strip()[:300]}
    return {"error": (proc.stderr.strip().splitlines() or ["no output"])[-1][:300]}


def _relative(a, b):
    """Largest difference of two lists of arrays, relative to the largest entry of all of
    them (a parameter that is only roundoff, as the Legendre fit's ``a`` and ``c`` near 0,
    is judged on the scale of the others)."""
    import numpy as np
    a = [np.asarray(x, dtype=float) for x in a]
    b = [np.asarray(y, dtype=float) for y in b]
    if [x.shape for x in a] != [y.shape for y in b]:
        return float("inf")
    scale = max([float(np.max(np.abs(x))) for x in a if x.size] + [1e-30])
    return max([float(np.max(np.abs(x - y))) / scale for x, y in zip(a, b) if x.size] + [0.0])


def _compare(ref, ours):
    """(the largest relative difference of the first ``STRICT`` losses, the largest over
    every loss and the parameters). Rounding differences grow over training steps (the
    word_language_model's SGD at lr 20 multiplies them), so only the first steps are held
    to ``--rtol``; the rest is the drift, held to ``DRIFT``."""
    if len(ref["losses"]) != len(ours["losses"]):
        return float("inf"), float("inf")
    early = _relative([ref["losses"][:STRICT]], [ours["losses"][:STRICT]])
    return early, max(early, _relative([ref["losses"]], [ours["losses"]]),
                      _relative(ref["params"], ours["params"]))


def _verdict(ref, ours, rtol):
    early, drift = _compare(ref, ours)
    good = early <= rtol and drift <= DRIFT
    return good, (f"{'agree' if good else 'DIFFER'} (first {STRICT} losses to {early:.1e}, "
                  f"all losses and the parameters to {drift:.1e})")


def _explain_line(reports):
    if not reports:
        return "nothing compiled"
    parts = []
    for r in reports:
        if "error" in r:
            parts.append(r["error"])
            continue
        text = (f"{r['name']}: {r['graphs']} graph(s)"
                + (f" of {'/'.join(map(str, r['nodes']))} nodes" if r["nodes"] else "")
                + (f", capture {'/'.join(f'{s * 1e3:.0f}' for s in r['capture_s'])} ms"
                   if r["capture_s"] else ""))
        if r["breaks"]:
            reasons = sorted(set(r["breaks"]), key=r["breaks"].index)
            text += f", {len(r['breaks'])} graph break(s): " + " | ".join(reasons[:3])
        if r["recompiles"]:
            text += f", {len(r['recompiles'])} recompile(s): {r['recompiles'][0]}"
        parts.append(text)
    return "; ".join(parts)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", help=f"programs (default: all of {', '.join(PROGRAMS)})")
    parser.add_argument("--examples", help="a pytorch/examples checkout")
    parser.add_argument("--tutorials", help="a pytorch/tutorials checkout")
    parser.add_argument("--steps", type=int, default=12,
                        help="backward calls per run (default 12)")
    parser.add_argument("--quick", action="store_true", help="--steps 5")
    parser.add_argument("--clock", choices=("wall", "cpu"), default="cpu")
    parser.add_argument("--rtol", type=float, default=1e-5,
                        help="tracegrad eager vs PyTorch, relative to the largest entry")
    parser.add_argument("--timeout", type=int, default=1800)
    parser.add_argument("--modes", default="torch,tg,tgc",
                        help="which of torch,tg,tgc to run (default all three)")
    parser.add_argument("--json", help="write the results to this file")
    args = parser.parse_args()
    steps = 5 if args.quick else args.steps
    if steps <= WARMUP:
        parser.error(f"--steps must be more than {WARMUP}")
    modes = args.modes.split(",")
    checkouts = {"examples": args.examples, "tutorials": args.tutorials}
    failed, results = False, {}
    head = f"{'program':26} {'torch ms':>9} {'tg ms':>9} {'tgc ms':>9} {'tg/torch':>8} {'tgc/torch':>9}"
    print(f"{steps} steps each, {args.clock} time per step after the first {WARMUP}\n{head}")
    for name in args.names or list(PROGRAMS):
        spec = PROGRAMS[name]
        checkout = checkouts[spec["checkout"]]
        if not checkout or not (Path(checkout) / spec["folder"] / spec["script"]).exists():
            print(f"{name:26} skipped: no --{spec['checkout']} checkout with "
                  f"{spec['folder']}/{spec['script']}", flush=True)
            continue
        res = {m: _run(name, m, checkout, steps, args.clock, args.timeout) for m in modes}
        results[name] = res
        ms = {m: res[m].get("ms_per_step") for m in modes}

        def fmt(v):
            return f"{v:9.2f}" if v is not None else f"{'-':>9}"

        def ratio(m):
            if ms.get(m) is None or not ms.get("torch"):
                return "-"
            return f"{ms[m] / ms['torch']:.2f}x"
        print(f"{name:26} {fmt(ms.get('torch'))} {fmt(ms.get('tg'))} {fmt(ms.get('tgc'))} "
              f"{ratio('tg'):>8} {ratio('tgc'):>9}", flush=True)
        for m in modes:
            if res[m].get("error"):
                failed = failed or m != "torch"
                print(f"    {m}: FAILS after {res[m].get('steps', 0)} steps: {res[m]['error']}")
        ok = {m for m in modes if not res[m].get("error")}
        if {"torch", "tg"} <= ok:
            good, text = _verdict(res["torch"], res["tg"], args.rtol)
            failed = failed or not good
            print(f"    tg eager vs torch: {text}")
        if {"tg", "tgc"} <= ok:
            if res["tg"]["digest"] == res["tgc"]["digest"] and res["tg"]["losses"] == res["tgc"]["losses"]:
                print("    tg compiled vs tg eager: bits (every loss and parameter bit for bit)")
            else:
                good, text = _verdict(res["tg"], res["tgc"], args.rtol)
                failed = failed or not good
                print(f"    tg compiled vs tg eager: rounding, not bits: {text}")
        if "tgc" in res:
            print(f"    compiled: {_explain_line(res['tgc'].get('compiled', []))}", flush=True)
    if args.json:
        for res in results.values():
            for r in res.values():
                r.pop("params", None)
        Path(args.json).write_text(json.dumps(results, indent=1))
    return 1 if failed else 0


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        _child(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]), sys.argv[6])
    else:
        sys.exit(main())
