"""What the tests of recorded H200 calls share: the probe scripts' operand generator, reading a
recording, and the per-kind tally they print."""
import importlib.util
import json
import lzma
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[2]
PROBES = ROOT / "corpus/library/probes"


def generator():
    """scripts/torch-bmm-probe.py as a module: `rows` regenerates any record's operands."""
    spec = importlib.util.spec_from_file_location("bmm_probe", ROOT / "scripts/torch-bmm-probe.py")
    g = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(g)
    return g


def records(name):
    """The JSON lines of corpus/library/probes/NAME.jsonl.xz."""
    with lzma.open(PROBES / f"{name}.jsonl.xz", "rt") as f:
        return [json.loads(line) for line in f]


def tally(recs, results, kind):
    """Print how many calls of each kind (`kind(record)`) came out each way ("exact", "wrong",
    "declined: why" counted as "declined")."""
    counts = {}
    for r, res in zip(recs, results):
        key = (*kind(r), res.split(":")[0])
        counts[key] = counts.get(key, 0) + 1
    for key in sorted(counts):
        print(key, counts[key])
