"""Where the real traces and the captured sacct output are (shared by the trace tests)."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import require_or_skip

REPO = Path(__file__).resolve().parents[2]
#: ``../shared/traces`` beside the clone (read-only in CI).
TRACES = REPO.parent / "shared" / "traces"
SACCT_FIXTURES = REPO / "tests" / "fixtures" / "sacct"


def workloads(directory: Path) -> list[Path]:
    """The ``workload-*.csv`` files of ``directory``; when there are none (no ../shared),
    the pattern itself, so that a test over them reaches :func:`need` and says why it
    skips (an empty parameter list would skip silently, under CI=true too)."""
    return sorted(directory.glob("workload-*.csv")) or [directory / "workload-*.csv"]


PHILLY = TRACES / "philly-pollux" / "philly.csv"
POLLUX = workloads(TRACES / "philly-pollux" / "pollux-workloads")
SIA = workloads(TRACES / "helios-saturn-sia")
MUSTANG_MIXED = TRACES / "lanl-mustang-slurm" / "mustang_week_2012-12-13.csv"
MUSTANG_LARGE = TRACES / "lanl-mustang-slurm" / "mustang_week_2012-02-07.csv"
SWF = TRACES / "pwa-swf-nasa-ipsc" / "NASA-iPSC-1993-3.1-cln.swf.gz"


def need(path: Path) -> Path:
    """``path``, or skip (fail under CI=true) when ../shared is not beside the clone."""
    if not path.exists():
        require_or_skip(f"{path} is missing (../shared/traces must sit beside the clone)")
    return path
