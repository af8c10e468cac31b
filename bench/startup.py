"""Start-up of ``featx extract``: time from process start to the first forward pass, and to the end of the
whole command (the write and the exit included), broken down.

    PYTHONPATH=$PWD python bench/startup.py                        # this checkout, 5 rounds
    PYTHONPATH=$PWD python bench/startup.py --rev 8bc0dbd --rounds 5   # that revision vs this checkout
    PYTHONPATH=$PWD python bench/startup.py --corpus data/demo.csv --rows 20 -- --dtype bfloat16

Each round starts a fresh ``python`` that runs ``featx extract`` (``featx.cli``) on a small corpus (the
first ``--rows`` rows of ``--corpus``) with the default model, through the console command's own entry
(``featx.cli.run``, or ``featx.cli.main`` in revisions without it), to the end of the process. A sampling
thread in that process looks at the main thread's stack every millisecond and files each sample under a
phase, by the frames on the stack (first rule that matches), until the first forward pass over the
corpus's rows:

  imports: <package>   a module is being imported; the package is the outermost non-featx module being
                       imported (so sympy pulled in by torch counts as torch), or featx
  causal check         the two-token forward pass ``is_causal`` makes at load
  weights hash         ``weights_sha256`` / a fingerprint of the weight files, or waiting for the thread
                       that computes it
  corpus hash          the corpus file's sha256
  tokenizer load       ``AutoTokenizer.from_pretrained``, or featx's own tokenizer (``load_native_tokenizer``)
  model load           building and loading the network (``from_pretrained``/``from_config``, or featx's own
                       BERT: ``load_bert``), oneDNN prepack
  tokenising           ``tokenize_texts``
  other                everything else (argument parsing, reading the corpus, the plan, opening the file)

From the first forward pass on, samples go to "after: forward" (a model's forward), "after: writing"
(featx's store) or "after: other" (pooling, the collate thread's hand-over, closing), until the
command returns; "after: exit" is the time from the command's return (featx's last ``atexit`` handler) to
the end of the process as the parent sees it (interpreter teardown; ``featx.exiting`` skips most of it).
"interpreter" is the time from the parent's ``Popen`` to the child's first Python line (interpreter
start and ``site``). "whole command" is the parent's wall time, and "CPU, whole command" the child's user
plus system CPU time (``os.wait4``): the figure to compare on a loaded machine. A second table files the
process's CPU time (every thread's: torch's workers, the weights hash and the writer too) under the same
phases, by the main thread's phase at each sample; the sampler's own CPU is left out of the phases and of
its "whole command", and "after: exit" there is the CPU the process spent after the command returned. On a
shared machine, where the wall time of every phase stretches with the load, that table says where the
work goes. Revisions given with
``--rev`` are unpacked with ``git archive`` into a temporary folder and run with the same interpreter,
alternating with this checkout; medians over the rounds.
The features cache (the weight fingerprint cache) is whatever the user's is: the first round of a
revision that caches may pay the full hash once; ``--cold`` deletes featx's fingerprint cache before
each round.
"""

from __future__ import annotations

import argparse
import atexit
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
_THIS = str(Path(__file__).resolve())
INTERVAL = 0.001
TOTALS = ["total to first forward", "whole command", "CPU, whole command"]

# (phase, predicate on (co_name, filename)) checked on every frame of a sample, innermost first
_NAMED = [
    ("causal check", lambda name, file: name == "is_causal"),
    ("weights hash", lambda name, file: name in ("weights_sha256", "weights_fingerprint", "file_digest")),
    # featx hashes in a thread while the model loads; the main thread waiting for it is hash time too
    ("weights hash", lambda name, file: name == "wait" and file.endswith("fingerprints.py")),
    ("corpus hash", lambda name, file: name == "file_sha256"),
    ("model load", lambda name, file: name in ("_load_network", "prepack_linears", "load_bert")),
    ("tokenizer load", lambda name, file: name in ("load_tokenizer", "load_native_tokenizer")),
    ("tokenising", lambda name, file: name == "tokenize_texts"),
]


def _package(file: str) -> str:
    """The top-level package of a module file ('torch', 'transformers', 'featx', ...)."""
    parts = Path(file).parts
    if "site-packages" in parts:
        rest = parts[parts.index("site-packages") + 1 :]
        return rest[0].removesuffix(".py") if rest else "?"
    if "featx" in parts:
        return "featx"
    return "stdlib/other"


def _is_model_file(file: str) -> bool:
    """Whether a frame's file is a model's code: transformers' models, or featx's own network (``fast/``;
    ``native/`` in revisions before the extraction package's subpackages)."""
    file = file.replace("\\", "/")
    return "/transformers/models/" in file or "/featx/extraction/native/" in file or "/featx/extraction/fast/" in file


def classify(frames: list[tuple[str, str]]) -> str | None:
    """The phase of one stack sample (innermost frame first); None: the first forward pass has begun."""
    importing = [file for name, file in frames if name == "<module>" and file != _THIS]
    in_import = any("importlib._bootstrap" in file for _, file in frames)
    # the causal check's forward and prepack_linears' parity check (a PackedLinear's forward) are not the first
    # forward pass over the corpus
    in_load = any(name in ("is_causal", "prepack_linears") for name, _ in frames)
    for name, file in frames:
        if name == "forward" and _is_model_file(file) and not in_load:
            return None
    if in_import and importing:
        packages = [_package(file) for file in importing if _package(file) != "featx"]
        # the outermost non-featx module being imported is the one that was asked for
        return f"imports: {packages[-1] if packages else 'featx'}"
    for name, file in frames:
        for phase, matches in _NAMED:
            if matches(name, file):
                return phase
    return "other"


def _after(frames: list[tuple[str, str]]) -> str:
    """The phase of a sample taken after the first forward pass."""
    if any(name == "forward" and _is_model_file(file) for name, file in frames):
        return "after: forward"
    if any("/featx/store/" in file.replace("\\", "/") for _, file in frames):
        return "after: writing"
    return "after: other"


def child(argv: list[str]) -> None:
    """Run the ``featx`` command in this process to its end; a thread samples the main thread's stack, and the
    last ``atexit`` handler (registered first) writes what it saw."""
    started = time.time()
    main_id = threading.get_ident()
    counts: dict[str, float] = {}
    cpu: dict[str, float] = {}  # the process's CPU time (every thread but the sampler's) by phase
    sampler_cpu = [0.0]
    marks: dict[str, float | None] = {"started": started, "first_forward": None, "cpu_started": time.process_time()}
    out = os.environ["FEATX_STARTUP_OUT"]

    def report() -> None:
        marks["returned"] = time.time()
        marks["cpu_returned"] = time.process_time()  # the sampler's own CPU included, as in the parent's figure
        marks["cpu_sampler"] = sampler_cpu[0]
        Path(out).write_text(json.dumps({**marks, "phases": dict(counts), "cpu": dict(cpu)}))

    atexit.register(report)

    def sample():
        last = time.perf_counter()
        cpu_last = time.process_time()
        while True:
            time.sleep(INTERVAL)
            frame = sys._current_frames().get(main_id)
            now = time.perf_counter()
            frames = []
            while frame is not None:
                frames.append((frame.f_code.co_name, frame.f_code.co_filename))
                frame = frame.f_back
            phase = classify(frames) if marks["first_forward"] is None else _after(frames)
            if phase is None:
                marks["first_forward"] = time.time()
                phase = _after(frames)
            counts[phase] = counts.get(phase, 0.0) + (now - last)
            last = now
            sampler_cpu[0] = time.thread_time()
            cpu_now = time.process_time() - sampler_cpu[0]
            cpu[phase] = cpu.get(phase, 0.0) + (cpu_now - cpu_last)
            cpu_last = cpu_now

    threading.Thread(target=sample, daemon=True).start()
    sys.argv = ["featx", *argv]
    import featx.cli

    entry = getattr(featx.cli, "run", None)  # the console command; revisions before it: the click group
    if entry is None:
        featx.cli.main(argv)
    else:
        entry(argv)


def run_once(root: Path, featx_args: list[str]) -> dict:
    with tempfile.TemporaryDirectory(prefix="featx-startup-") as tmp:
        out = Path(tmp) / "out.json"
        env = {**os.environ, "PYTHONPATH": str(root), "FEATX_STARTUP_OUT": str(out)}
        command = [sys.executable, _THIS, "--child", "--", *featx_args, "-o", str(Path(tmp) / "f.h5")]
        t0 = time.time()
        process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        stderr = process.stderr.read() if process.stderr else ""
        _, status, usage = os.wait4(process.pid, 0)
        ended = time.time()
        code = os.waitstatus_to_exitcode(status)
        if not out.exists() or code != 0:
            raise SystemExit(f"the child failed (rc {code}):\n{stderr[-3000:]}")
        data = json.loads(out.read_text())
    if data["first_forward"] is None:
        raise SystemExit(f"no forward pass was seen (rc {code}):\n{stderr[-3000:]}")
    phases = {"interpreter": data["started"] - t0, **data["phases"]}
    phases["after: exit"] = ended - data["returned"]
    phases["total to first forward"] = data["first_forward"] - t0
    phases["whole command"] = ended - t0
    phases["CPU, whole command"] = usage.ru_utime + usage.ru_stime
    cpu = {"interpreter": data["cpu_started"], **data["cpu"]}
    cpu["after: exit"] = phases["CPU, whole command"] - data["cpu_returned"]
    cpu["total to first forward"] = sum(s for phase, s in cpu.items() if not phase.startswith("after"))
    cpu["whole command"] = phases["CPU, whole command"] - data["cpu_sampler"]
    return {**phases, **{f"CPU: {phase}": seconds for phase, seconds in cpu.items()}}


def checkout(rev: str) -> Path:
    """``rev`` unpacked into a temporary folder, removed when the bench ends."""
    folder = Path(tempfile.mkdtemp(prefix=f"featx-{rev}-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev], capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive, check=True)
    return folder


def clear_fingerprint_cache() -> None:
    """Delete featx's weight fingerprint cache (this checkout's location rules), so a round hashes again."""
    from featx.extraction.model.fingerprints import CACHE_FILE, cache_dir

    (cache_dir() / CACHE_FILE).unlink(missing_ok=True)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rev", action="append", default=[], help="a git revision to compare (repeatable)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--corpus", type=Path, default=ROOT / "data" / "demo.csv")
    parser.add_argument("--rows", type=int, default=20)
    parser.add_argument("--cold", action="store_true", help="delete featx's weight fingerprint cache before each round")
    parser.add_argument("extra", nargs="*", help="more featx extract options (after --)")
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    roots = [(rev, checkout(rev)) for rev in args.rev] + [("this checkout", ROOT)]
    with tempfile.TemporaryDirectory(prefix="featx-startup-corpus-") as tmp:
        corpus = Path(tmp) / "corpus.csv"
        lines = args.corpus.read_text(encoding="utf-8").splitlines()[: args.rows + 1]
        corpus.write_text("\n".join(lines) + "\n", encoding="utf-8")
        featx_args = ["extract", str(corpus), "--overwrite", "-q", "--device", "cpu", *args.extra]
        print(f"# bench/startup.py {' '.join(sys.argv[1:])}; load {os.getloadavg()}", flush=True)
        rounds: dict[str, list[dict]] = {name: [] for name, _ in roots}
        for index in range(args.rounds):
            for name, root in roots:
                if args.cold:
                    clear_fingerprint_cache()
                phases = run_once(root, featx_args)
                rounds[name].append(phases)
                print(
                    f"round {index} {name}: {phases['total to first forward']:.2f} s to the first forward, "
                    f"{phases['whole command']:.2f} s whole ({phases['CPU, whole command']:.2f} s CPU)",
                    flush=True,
                )
    report(rounds)
    print(f"load after: {os.getloadavg()}")


def _order(phase: str) -> tuple:
    """Phases before the first forward pass, then after it ("other" last in each), then the totals."""
    total = phase in TOTALS
    return (total, TOTALS.index(phase) if total else 0, phase.startswith("after"), phase == "other", phase)


def report(rounds: dict[str, list[dict]]) -> None:
    """Two tables of medians: wall time by phase, then the process's CPU time by phase (every thread's, the
    sampler's own excluded; the figures to compare on a shared machine)."""
    names = list(rounds)
    found = {phase for runs in rounds.values() for run in runs for phase in run}
    wall = sorted((p for p in found if not p.startswith("CPU: ")), key=_order)
    cpu = sorted((p.removeprefix("CPU: ") for p in found if p.startswith("CPU: ")), key=_order)
    for title, phases, prefix in (("phase (median s)", wall, ""), ("CPU by phase (median s)", cpu, "CPU: ")):
        print(f"\n| {title} | " + " | ".join(names) + " |")
        print("|---|" + "---:|" * len(names))
        for phase in phases:
            cells = [statistics.median(run.get(prefix + phase, 0.0) for run in rounds[name]) for name in names]
            print(f"| {phase} | " + " | ".join(f"{cell:.2f}" for cell in cells) + " |")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(sys.argv[3:] if sys.argv[2:3] == ["--"] else sys.argv[2:])
    else:
        main()
