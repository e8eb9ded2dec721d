"""``mlsub plugins check`` and ``install-files``: the parser of check.lua's report (pure),
the check against real files with lua5.1, and the CLI end to end (CliRunner)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from slurm_mlsched.cli.app import app
from slurm_mlsched.errors import LuaMissingError
from slurm_mlsched.plugins import PLUGIN_FILES, check_plugins, find_lua, install_files, plugin_dir
from slurm_mlsched.plugins.check import Finding, parse_check_output, site_line
from slurm_mlsched.slurm.runner import LocalRunner

ROOT = Path(__file__).resolve().parents[2]
JOB_SUBMIT = ROOT / "plugins" / "job_submit.lua"
CLI_FILTER = ROOT / "plugins" / "cli_filter.lua"


def broken_copy(tmp_path: Path, source: Path, old: str, new: str, name: str = "") -> Path:
    """A copy of ``source`` with the first ``old`` (in the site table, at the top, when it is
    a setting) replaced by ``new``."""
    text = source.read_text()
    assert old in text, old
    path = tmp_path / (name or source.name)
    path.write_text(text.replace(old, new, 1))
    return path


def line_of(path: Path, text: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if text in line)


# --- the report parser (pure) ----------------------------------------------------------------

SOURCE = """-- header
local SITE = {
   -- a comment
   ml_partitions = { "ml" },
   mode = "hint",
}
local x = 1
"""


def test_site_problems_land_on_their_setting_line() -> None:
    assert site_line(SOURCE, "ml_partitions[2]") == 4
    assert site_line(SOURCE, "mode") == 5
    assert site_line(SOURCE, "ml_partition") == 2  # not written there: the table's line
    assert site_line("return 0\n", "mode") is None


def test_parse_check_output_reads_kinds_errors_and_notes() -> None:
    text = (
        "kind\tjob_submit\n"
        'error\tsite:mode\tmust be "hint", "plan" or "off", got loud\n'
        "error\tsyntax\t/a/long/dir/x.lua:7: '=' expected near 'y'\n"
        "error\tload\t...ng/dir/x.lua:9: attempt to index global 'foo' (a nil value)\n"
        "error\tload\tother.lua:3: boom\n"
        "error\tsmoke\tslurm_job_submit(a tagged job) raised: x\n"
        "note\tnot an mlsched plugin: its settings were not checked\n"
        "garbage\n"
    )
    kind, findings = parse_check_output("/a/long/dir/x.lua", SOURCE, text)
    assert kind == "job_submit"
    assert [(f.line, f.stage, f.severity) for f in findings] == [
        (5, "site", "error"),
        (7, "syntax", "error"),
        (9, "load", "error"),
        (None, "load", "error"),  # another file's position is kept in the message
        (None, "smoke", "error"),
        (None, "note", "note"),
    ]
    assert findings[1].message == "'=' expected near 'y'"
    assert findings[3].message == "other.lua:3: boom"
    assert (
        str(findings[0]) == '/a/long/dir/x.lua:5: error: site setting mode: must be "hint", '
        '"plan" or "off", got loud'
    )
    assert str(Finding("a.lua", None, "m", "note", "note")) == "a.lua: note: m"


# --- the check with lua5.1 -------------------------------------------------------------------


def check(lua: str, *paths: Path) -> list[tuple[str | None, bool, list[str]]]:
    report = check_plugins(list(paths), runner=LocalRunner(), lua=lua)
    return [(f.kind, f.ok, [str(x) for x in f.findings]) for f in report.files]


def test_the_shipped_plugins_pass(lua: str) -> None:
    assert check(lua, JOB_SUBMIT, CLI_FILTER) == [
        ("job_submit", True, []),
        ("cli_filter", True, []),
    ]


def test_a_syntax_error_in_the_site_table_is_reported_with_file_and_line(
    lua: str, tmp_path: Path
) -> None:
    # the comma after a setting forgotten: Lua notices at the next setting
    path = broken_copy(
        tmp_path, JOB_SUBMIT, 'ml_partitions = { "ml" },', 'ml_partitions = { "ml" }'
    )
    ((kind, ok, findings),) = check(lua, path)
    assert (kind, ok) == (None, False)
    line = line_of(path, "ml_job_name_patterns =")
    assert findings == [
        f"{path}:{line}: error: '}}' expected (to close '{{' at line "
        f"{line_of(path, 'local SITE')}) near 'ml_job_name_patterns'"
    ]


@pytest.mark.parametrize(
    ("source", "old", "new", "expected"),
    [
        (JOB_SUBMIT, 'ml_partitions = { "ml" },', 'ml_partitions = "ml",',
         "site setting ml_partitions: must be a list of strings"),
        (JOB_SUBMIT, 'ml_partitions = { "ml" },', 'ml_partitions = { "" },',
         "site setting ml_partitions[1]: must be a non-empty string"),
        (JOB_SUBMIT, "ml_comment_patterns = {},", 'ml_comment_patterns = { "[" },',
         "site setting ml_comment_patterns[1]: \"[\" is not a valid Lua pattern"),
        (JOB_SUBMIT, "exempt_uids = {},", "exempt_uid = { 0 },",
         "site setting exempt_uid: unknown setting"),
        (CLI_FILTER, 'mode = "hint",', 'mode = "plan",', None),  # the default command is absolute
        (CLI_FILTER, '"/usr/local/bin/mlsub", "plan"', '"mlsub", "plan"',
         "site setting plan_command[1]: \"mlsub\": the program must be an absolute path"),
        (CLI_FILTER, "plan_timeout_s = 30,", 'plan_timeout_s = "30",',
         "site setting plan_timeout_s: must be a number of seconds"),
    ],
    ids=["type", "empty-partition", "bad-pattern", "typo", "plan-ok", "relative-command",
         "timeout-type"],
)  # fmt: skip
def test_site_table_problems_are_reported_on_their_line(
    lua: str, tmp_path: Path, source: Path, old: str, new: str, expected: str | None
) -> None:
    path = broken_copy(tmp_path, source, old, new)
    ((kind, ok, findings),) = check(lua, path)
    assert kind == source.stem
    if expected is None:
        assert (ok, findings) == (True, [])
        return
    assert not ok and len(findings) == 1, findings
    setting = new.split("=")[0].strip().strip('"')
    line = line_of(path, new) if not new.startswith('"') else line_of(path, setting)
    assert findings[0].startswith(f"{path}:{line}: error: {expected}"), findings


def test_load_errors_missing_functions_and_bad_returns(lua: str, tmp_path: Path) -> None:
    crash = broken_copy(tmp_path, JOB_SUBMIT, "local M = { site = SITE }",
                        "local M = { site = SITE.nothing.here }", "crash.lua")  # fmt: skip
    missing = broken_copy(tmp_path, JOB_SUBMIT, "function slurm_job_modify(", "function modify(",
                          "missing.lua")  # fmt: skip
    returns = broken_copy(tmp_path, CLI_FILTER, "\nreturn slurm.SUCCESS\n", "\nreturn 7\n",
                          "returns.lua")  # fmt: skip
    exits = tmp_path / "exits.lua"
    exits.write_text("os.exit(3)\n")
    results = check(lua, crash, missing, returns, exits)
    assert results[0] == (None, False, [
        f"{crash}:{line_of(crash, 'SITE.nothing')}: error: attempt to index field 'nothing' "
        "(a nil value)"
    ])  # fmt: skip
    assert results[1] == ("job_submit", False, [
        f"{missing}: error: required function slurm_job_modify is not defined"
    ])  # fmt: skip
    assert results[2][:2] == ("cli_filter", False)
    assert results[2][2] == [f"{returns}: error: the script returned 7 when loaded; Slurm needs "
                             "slurm.SUCCESS (0) or nothing"]  # fmt: skip
    assert (
        results[3][1] is False and "ended the Lua interpreter (exit status 3)" in results[3][2][-1]
    )


def test_a_plugin_that_misbehaves_on_sample_jobs_is_caught(lua: str, tmp_path: Path) -> None:
    # the message passed as a format: a '%' in it fails inside slurm.log_user, as in slurmctld
    path = broken_copy(tmp_path, JOB_SUBMIT, 'slurm.log_user("%s", message)',
                       "slurm.log_user(message .. ' 100%')")  # fmt: skip
    ((kind, ok, findings),) = check(lua, path)
    assert (kind, ok) == ("job_submit", False)
    assert any("internal error" in f and "untagged job" in f for f in findings), findings


def test_foreign_plugins_are_loaded_but_their_settings_not_judged(lua: str) -> None:
    demo = ROOT / "scripts" / "slurm-lab" / "job_submit.lua"
    ((kind, ok, findings),) = check(lua, demo)
    assert (kind, ok) == ("job_submit", True)
    assert findings == [f"{demo}: note: not an mlsched plugin: its settings were not checked"]


def test_find_lua_names_the_package_when_missing(tmp_path: Path) -> None:
    with pytest.raises(LuaMissingError) as info:
        find_lua({"PATH": str(tmp_path)})
    assert "apt-get install lua5.1" in info.value.hint and info.value.exit_code == 3
    with pytest.raises(LuaMissingError):
        find_lua({"MLSUB_LUA": str(tmp_path / "nope"), "PATH": os.environ.get("PATH", "")})


# --- the CLI ---------------------------------------------------------------------------------


def run(*args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args), env=env)
    return result.exit_code, result.stdout, result.stderr


def test_cli_check_ok_and_json(lua: str) -> None:
    code, out, _ = run("plugins", "check", str(JOB_SUBMIT), str(CLI_FILTER))
    assert code == 0
    assert out.splitlines() == [
        f"{JOB_SUBMIT}: ok (job_submit, checked with {lua})",
        f"{CLI_FILTER}: ok (cli_filter, checked with {lua})",
    ]
    code, out, _ = run("plugins", "check", "--json", str(JOB_SUBMIT))
    assert code == 0
    assert json.loads(out) == {
        "ok": True,
        "interpreter": lua,
        "files": [{"path": str(JOB_SUBMIT), "kind": "job_submit", "ok": True, "findings": []}],
    }


def test_cli_check_fails_with_file_line_and_the_lua_error(lua: str, tmp_path: Path) -> None:
    path = broken_copy(
        tmp_path, JOB_SUBMIT, "annotate_all_tagged = true,", "annotate_all_tagged = true"
    )
    code, out, err = run("plugins", "check", str(path), str(CLI_FILTER))
    assert code == 3
    line, site = line_of(path, "submit_command ="), line_of(path, "local SITE")
    assert out.splitlines() == [
        f"{path}:{line}: error: '}}' expected (to close '{{' at line {site}) near 'submit_command'",
        f"{CLI_FILTER}: ok (cli_filter, checked with {lua})",
    ]
    assert f"error[plugin-check-failed]: {path}: not safe to install" in err
    code, out, _ = run("plugins", "check", "--json", str(path))
    assert code == 3
    (finding,) = json.loads(out)["files"][0]["findings"]
    assert finding["line"] == line and finding["stage"] == "syntax"


def test_cli_check_defaults_to_the_files_next_to_slurm_conf(lua: str, tmp_path: Path) -> None:
    conf = tmp_path / "slurm.conf"
    conf.write_text("")
    code, _, err = run("plugins", "check", env={"SLURM_CONF": str(conf)})
    assert code == 3 and "holds no job_submit.lua or cli_filter.lua" in err
    install_files(tmp_path)
    code, out, _ = run("plugins", "check", env={"SLURM_CONF": str(conf)})
    assert code == 0 and out.count(": ok (") == 2


def test_cli_check_without_the_interpreter(tmp_path: Path) -> None:
    code, out, err = run(
        "plugins", "check", str(JOB_SUBMIT), env={"MLSUB_LUA": str(tmp_path / "lua-missing")}
    )
    assert (code, out) == (3, "")
    assert "error[lua-missing]" in err and "apt-get install lua5.1" in err


def test_install_files_copies_the_shipped_plugins(lua: str, tmp_path: Path) -> None:
    code, out, _ = run("plugins", "install-files", "--dest", str(tmp_path))
    assert code == 0
    for name in PLUGIN_FILES:
        assert (tmp_path / name).read_text() == (plugin_dir() / name).read_text()
        assert (tmp_path / name).stat().st_mode & 0o777 == 0o644
    epilog = tmp_path / "epilog_slurmctld.sh"  # the queue's EpilogSlurmctld: executable
    assert epilog.read_text() == (plugin_dir() / epilog.name).read_text()
    assert epilog.stat().st_mode & 0o777 == 0o755
    assert "mlsub plugins check" in out
    code, _, err = run("plugins", "install-files", "--dest", str(tmp_path))
    assert code == 3 and "--force" in err
    assert run("plugins", "install-files", "--dest", str(tmp_path), "--force")[0] == 0
    assert run("plugins", "install-files", "--dest", str(tmp_path / "nope"))[0] == 3


def test_install_files_never_writes_through_a_symlink(tmp_path: Path) -> None:
    """Issue 17: a symlink planted at the target made install-files write (and chmod 0644)
    another file. Now it is refused, with or without --force, and the file it points to is
    left as it was."""
    dest, victim = tmp_path / "etc-slurm", tmp_path / "victim"
    dest.mkdir()
    victim.write_text("secret\n")
    victim.chmod(0o600)
    (dest / "cli_filter.lua").symlink_to(victim)
    for extra in ([], ["--force"]):
        code, _, err = run("plugins", "install-files", "--dest", str(dest), *extra)
        assert code == 3 and "symbolic link" in err, err
    assert victim.read_text() == "secret\n" and victim.stat().st_mode & 0o777 == 0o600
    assert not (dest / "job_submit.lua").exists()  # nothing half-installed
    assert not list(dest.glob(".*"))  # no temporary file left
