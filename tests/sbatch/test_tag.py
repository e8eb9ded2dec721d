"""The decision tag in job comments: format, token, and finding it in any comment."""

from __future__ import annotations

from datetime import UTC, datetime

from slurm_mlsched.sbatch.render import render_sbatch
from slurm_mlsched.sbatch.tag import DecisionTag, decision_tag, find_tags
from tests.sbatch.test_sbatch_render import ADDRESSES, DISTRIBUTED, UNIFORM, spec

AT = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)


def tag(**kw: object) -> DecisionTag:
    args: dict[str, object] = {
        "cluster": "lab", "decision_id": 7, "created_at": AT, "user": "alice", "host": "login1",
    }  # fmt: skip
    return decision_tag(**{**args, **kw})  # type: ignore[arg-type]


def test_the_tag_is_stable_and_shaped_as_the_plugins_expect() -> None:
    t = tag()
    assert t == tag() and str(t).startswith("mlsched:decision=7:")
    assert len(t.token) == 12 and int(t.token, 16) >= 0 and t.token == t.token.lower()


def test_the_token_ignores_sub_second_digits_and_the_time_zone() -> None:
    from datetime import timedelta, timezone

    paris = timezone(timedelta(hours=1))
    assert tag(created_at=AT.replace(microsecond=999)) == tag()
    assert tag(created_at=AT.astimezone(paris)) == tag()


def test_every_input_changes_the_token() -> None:
    base = tag().token
    for change in (
        {"cluster": "other"},
        {"decision_id": 8},
        {"created_at": AT.replace(second=1)},
        {"user": "bob"},
        {"host": "login2"},
    ):
        assert tag(**change).token != base, change


def test_find_tags_reads_tags_among_other_text() -> None:
    t = tag()
    assert find_tags(f"site note;{t};lab-wrapper:checked") == (t,)
    assert find_tags(None) == () and find_tags("") == ()
    assert find_tags("mlsched:decision=7") == ()  # no token: not ours
    assert find_tags("mlsched:decision=7:0123456789abc") == ()  # 13 hex digits
    assert find_tags("mlsched:decision=7:0123456789abCD") == ()  # as the plugins read it
    assert find_tags("mlsched:decision=x:0123456789ab") == ()
    assert find_tags("mlsched:decision=1:0123456789ab mlsched:decision=2:ba9876543210") == (
        DecisionTag(1, "0123456789ab"),
        DecisionTag(2, "ba9876543210"),
    )


def test_every_component_carries_the_tag() -> None:
    comment = str(tag())
    text = render_sbatch(DISTRIBUTED, UNIFORM, ADDRESSES, spec(comment=comment)).text
    nodelines = [line for line in text.splitlines() if line.startswith("#SBATCH --nodelist=")]
    assert len(nodelines) == 2
    assert all(line.endswith(f" --comment={comment}") for line in nodelines)
    # Slurm gives components 1..n the default partition unless each line names it
    text = render_sbatch(DISTRIBUTED, UNIFORM, ADDRESSES, spec(partition="ml")).text
    nodelines = [line for line in text.splitlines() if line.startswith("#SBATCH --nodelist=")]
    assert all(" --partition=ml " in line for line in nodelines), nodelines
