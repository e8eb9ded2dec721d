"""Where the real traces and the captured sacct output are (shared by the trace tests)."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import require_or_skip

REPO = Path(__file__).resolve().parents[2]
#: ``../shared/traces`` beside the clone (read-only in CI).
TRACES = REPO.parent / "shared" / "traces"
SACCT_FIXTURES = REPO / "tests" / "fixtures" / "sacct"

PHILLY = TRACES / "philly-pollux" / "philly.csv"
POLLUX = sorted((TRACES / "philly-pollux" / "pollux-workloads").glob("workload-*.csv"))
SIA = sorted((TRACES / "helios-saturn-sia").glob("workload-*.csv"))
MUSTANG_MIXED = TRACES / "lanl-mustang-slurm" / "mustang_week_2012-12-13.csv"
MUSTANG_LARGE = TRACES / "lanl-mustang-slurm" / "mustang_week_2012-02-07.csv"
SWF = TRACES / "pwa-swf-nasa-ipsc" / "NASA-iPSC-1993-3.1-cln.swf.gz"


def need(path: Path) -> Path:
    """``path``, or skip (fail under CI=true) when ../shared is not beside the clone."""
    if not path.exists():
        require_or_skip(f"{path} is missing (../shared/traces must sit beside the clone)")
    return path
