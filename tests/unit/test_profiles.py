"""The shipped profile table (MODEL.md Appendix A) and its loader."""

from __future__ import annotations

import pytest

from slurm_mlsched.errors import InputError
from slurm_mlsched.files.profiles import (
    get_profile,
    load_profiles,
    parse_profile_table,
    profiles_version,
)

#: MODEL.md Appendix A, verbatim: name -> (τ s, size MB, b_ex MB/s, b_in MB/s).
PUBLISHED = {
    "resnet-50": (0.449, 102.2, 91.875, 306.5),
    "vgg-16": (0.535, 553.4, 233.0, 427.75),
    "resnext-110": (0.226, 6.92, 59.5, 63.0),
    "inception-bn": (0.815, 42.1, 145.875, 1082.125),
    "seq2seq": (0.075, 36.5, 120.125, 181.125),
    "cnn-text-classification": (0.585, 24.0, 60.75, 159.625),
    "dssm": (0.567, 6.0, 92.125, 65.625),
    "wlm": (0.154, 19.2, 10.375, 22.875),
}


def test_table_matches_the_published_values() -> None:
    profiles = load_profiles()
    assert set(profiles) == set(PUBLISHED)
    for name, (tau, size, bw_ex, bw_in) in PUBLISHED.items():
        p = profiles[name]
        assert (p.name, p.step_time_s, p.model_size_mb, p.bw_ex_mbps, p.bw_in_mbps) == (
            name,
            tau,
            size,
            bw_ex,
            bw_in,
        )


def test_dssm_is_kept_as_published_and_clamped_by_the_model() -> None:
    dssm = get_profile("dssm")
    assert dssm.bw_in_mbps < dssm.bw_ex_mbps
    assert dssm.effective_bw_in == dssm.bw_ex_mbps


def test_table_is_versioned() -> None:
    assert profiles_version()


def test_unknown_model_lists_the_valid_names() -> None:
    with pytest.raises(InputError) as info:
        get_profile("resnet-51")
    err = info.value
    assert "resnet-51" in err.message
    assert "resnet-50" in err.hint and "wlm" in err.hint
    assert err.exit_code == 3


def test_parse_rejects_a_table_without_version_or_with_wrong_columns() -> None:
    with pytest.raises(ValueError, match="profiles_version"):
        parse_profile_table("name,step_time_s,model_size_mb,bw_ex_mbps,bw_in_mbps\n")
    with pytest.raises(ValueError, match="columns"):
        parse_profile_table("# profiles_version: x\nname,tau\n")


def test_an_unknown_model_name_gets_the_closest_names() -> None:
    import pytest

    from slurm_mlsched.errors import InputError
    from slurm_mlsched.files.profiles import closest_names, get_profile

    names = ["resnet-50", "vgg-16", "resnext-110", "seq2seq"]
    assert closest_names("resnet50", names) == ["resnet-50"]
    assert closest_names("ResNet_50", names) == ["resnet-50"]
    assert closest_names("vgg16x", names) == ["vgg-16"]
    assert closest_names("alexnet", names) == []
    with pytest.raises(InputError) as err:
        get_profile("resnet50")
    assert err.value.hint.startswith("did you mean resnet-50?")
