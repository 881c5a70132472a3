"""Shared by the paper reproductions in this folder (docs/reproduction.md):
one `thicket bench` invocation per experiment, every engine in it under the
same settings and the same memory cap, and tables in the paper's shape with
ratios to the paper's baseline and to RocksDB beside the counters that show
each technique acted.

Every script takes `--quick` (a smoke run of at most 2 minutes, for CI) and
`--out DIR` (JSON, SVG plots and the tables as Markdown; default
/tmp/reproduce-NAME). They use `target/release/thicket` (or $THICKET) built
with the benchmark peers: `cargo build --release -p thicket-cli --features
peers`.
"""
import argparse
import json
import os
import platform
import subprocess
import sys
import time

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
THICKET = os.environ.get("THICKET") or os.path.join(
    os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target")), "release", "thicket")


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


class Reproduction:
    """One paper's run: arguments, the output folder, the report."""

    def __init__(self, name, doc, add_arguments=None, prog=None):
        """`add_arguments(parser)` adds a script's own options."""
        parser = argparse.ArgumentParser(prog=prog or f"scripts/reproduce/{name}", description=doc,
                                         formatter_class=argparse.RawDescriptionHelpFormatter)
        parser.add_argument("--quick", action="store_true",
                            help="a smoke run of at most 2 minutes (CI)")
        parser.add_argument("--out", default=None, help=f"output folder (default /tmp/reproduce-{name})")
        parser.add_argument("--reuse", action="store_true",
                            help="read each invocation's JSON from --out where it exists instead of "
                                 "running it again (redraws tables and plots)")
        if add_arguments:
            add_arguments(parser)
        self.args = parser.parse_args()
        self.quick = self.args.quick
        self.name = name
        self.out = self.args.out or f"/tmp/reproduce-{name}"
        os.makedirs(self.out, exist_ok=True)
        self.db = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"reproduce-{name}-db")
        self.lines = []
        self.failed_plots = []
        self.failed_runs = []
        self.started = time.time()
        if not os.access(THICKET, os.X_OK):
            sys.exit(f"{THICKET} not found: cargo build --release -p thicket-cli --features peers")
        self.say(f"# {name}{' (--quick)' if self.quick else ''}: "
                 f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {cpu_name()}, "
                 f"{os.cpu_count()} cores"
                 + (" (--reuse: tables and plots redrawn from the JSON of an earlier run)"
                    if self.args.reuse else ""))

    def say(self, line=""):
        print(line, flush=True)
        self.lines.append(line)

    def bench(self, label, engines, workloads, flags):
        """Runs one `thicket bench` invocation; its runs (a list of dicts).
        `flags` is a list of command-line words."""
        out = os.path.join(self.out, f"{label}.json")
        cmd = [THICKET, "bench", "--db", self.db, "--engine", ",".join(engines),
               "--workload", ",".join(workloads), "--json", out] + [str(f) for f in flags]
        shown = " ".join(c if c != THICKET else "thicket" for c in cmd)
        if self.args.reuse and os.path.exists(out):
            self.say(f"\n`{shown}` (reused {out})")
            with open(out) as f:
                return self._runs(json.load(f))
        self.say(f"\n`{shown}` (load average {os.getloadavg()[0]:.2f})")
        started = time.time()
        p = subprocess.run(cmd + ["--keep-going"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        report = None
        if os.path.exists(out):
            with open(out) as f:
                report = json.load(f)
        if p.returncode != 0 and not (report and report.get("failed_runs")):
            sys.stderr.write(p.stderr[-4000:])
            sys.exit(f"{label}: thicket bench failed ({p.returncode})")
        self.say(f"({time.time() - started:.0f} s)")
        return self._runs(report)

    def _runs(self, report):
        """The report's runs, failed ones (`--keep-going`) as `Failed`
        placeholders in the order they ran; each failure is reported."""
        runs = list(report["runs"])
        for f in report.get("failed_runs", []):
            self.failed_runs.append(f)
            self.say(f"\nFAILED: {f['engine']}:{f.get('profile') or ''} on {f['workload']}: {f['error']}")
            runs.append(Failed(f))
        return runs

    def plot(self, label, workload, svg_name=None):
        """Draws `thicket bench plot` of one workload of a result file."""
        src = os.path.join(self.out, f"{label}.json")
        svg = svg_name or f"{label}-{workload}.svg"
        self.draw(svg, ["plot", src, "--workload", workload])

    def plot_bars(self, svg_name, inputs, metric="ops_per_sec", workloads=(), title=None):
        """Draws `thicket bench plot-bars`: `inputs` are (label, group,
        series) of this run's invocations, group and series None for the
        run's own workload and engine."""
        specs = []
        for label, group, series in inputs:
            spec = os.path.join(self.out, f"{label}.json")
            spec += f",group={group}" if group else ""
            spec += f",series={series}" if series else ""
            specs.append(spec)
        args = ["plot-bars", *specs, "--metric", metric]
        args += [w for workload in workloads for w in ("--workload", workload)]
        args += ["--title", title] if title else []
        self.draw(svg_name, args)

    def draw(self, svg_name, args):
        """Runs a plot command into --out; a failure is reported and makes
        the script fail at the end, after the tables are written."""
        svg = os.path.join(self.out, svg_name)
        p = subprocess.run([THICKET, "bench", *args, "-o", svg], stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE, text=True)
        if p.returncode != 0:
            self.failed_plots.append(svg_name)
            self.say(f"\nplot {svg_name} failed: {p.stderr.strip()}")
        else:
            self.say(f"\n![{svg_name}]({svg_name})")

    def table(self, header, rows):
        self.say("")
        self.say("| " + " | ".join(header) + " |")
        self.say("|" + "---|" * len(header))
        for r in rows:
            self.say("| " + " | ".join(str(c) for c in r) + " |")

    def finish(self):
        self.say(f"\n{self.name}: {time.time() - self.started:.0f} s in all; results in {self.out}")
        with open(os.path.join(self.out, f"{self.name}.md"), "w") as f:
            f.write("\n".join(self.lines) + "\n")
        if self.failed_plots or self.failed_runs:
            sys.exit(f"{self.name}: {len(self.failed_runs)} run(s) failed, plots failed: "
                     f"{', '.join(self.failed_plots) or 'none'}")


class Failed(dict):
    """A run that failed (`failed_runs` of a `--keep-going` report): its
    engine, profile and workload, `failed` (the error), None for every
    figure."""

    def __init__(self, failed_run):
        super().__init__(engine=failed_run["engine"], profile=failed_run.get("profile"),
                         workload=failed_run["workload"], failed=failed_run["error"],
                         settings={"scan_length": failed_run.get("scan_length")})

    def __missing__(self, key):
        return None


def label(run):
    """A run's engine as named on the command line (`thicket:PROFILE`)."""
    if run["engine"] == "thicket":
        return f"thicket:{run['profile']}"
    return run["engine"]


def find(runs, engine, workload=None):
    for r in runs:
        if label(r) == engine and (workload is None or r["workload"] == workload):
            return r
    return None


def fmt(v, digits=1):
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:,.{digits}f}"
    return f"{v:,}" if isinstance(v, int) else str(v)


def per_thousand(v):
    """kops/s and the like: v / 1000, None for a failed run."""
    return None if v is None else v / 1e3


def ratio(a, b):
    if a is None or b is None or not b:
        return "-"
    return f"{a / b:.2f}x"


def p95(run, op=None):
    lat = run["latency_by_op"].get(op) if op else run.get("latency_us")
    return lat["p95"] if lat else None


def counters(run, technique, names=None):
    """`name=value` of one technique's counters in a run (`-` for peers)."""
    c = (run.get("mechanism_counters") or {}).get(technique)
    if not c:
        return "-"
    items = [(k, v) for k, v in c.items() if names is None or k in names]
    def show(v):
        if isinstance(v, float):
            return f"{v:.3g}"
        if isinstance(v, dict):
            return "{" + ",".join(f"{k}:{x}" for k, x in v.items() if x) + "}"
        if isinstance(v, list):
            return "[" + ",".join(str(x) for x in v) + "]"
        return str(v)
    return " ".join(f"{k}={show(v)}" for k, v in items)


def cap_hit(run):
    """How hard the memory cap bit: `peak MiB / cap MiB, major faults`."""
    if run.get("failed"):
        return "killed by the cap" if "killed by the memory cap" in run["failed"] else "failed"
    cap = run.get("memory_cap")
    if not cap:
        return "no cap"
    peak = cap.get("peak_bytes")
    return (f"{(peak or 0) / 2**20:.0f}/{cap['limit_bytes'] / 2**20:.0f} MiB, "
            f"{fmt(run.get('major_faults'))} majflt")
