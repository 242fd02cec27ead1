"""`ergon completion`: the bash script completes commands and subcommands in a real bash; the zsh
and fish scripts name them; `install` puts the script where each shell loads it from and adds
the start-up line; a shell it cannot tell is one `error:` line naming the option to give."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from cli_process import ROOT, clean_env


def _ergon(*argv: str, home: Path | None = None, **extra: str) -> subprocess.CompletedProcess[str]:
    env = clean_env(**extra)
    for name in ("BASH_VERSION", "ZSH_VERSION", "FISH_VERSION", "SHELL"):
        env.pop(name, None)
    if home is not None:
        env["HOME"] = str(home)
        env.pop("ZSH", None)
        env.pop("ZSH_CUSTOM", None)
    return subprocess.run([sys.executable, "-m", "flows.cli", *argv], cwd=ROOT, env={**env, **extra},
                          capture_output=True, text=True, timeout=180)


@pytest.fixture(scope="module")
def scripts() -> dict[str, str]:
    found = {}
    for shell in ("bash", "zsh", "fish"):
        done = _ergon("completion", "show", shell)
        assert done.returncode == 0, done.stderr
        found[shell] = done.stdout
    return found


def _complete(script: Path, *words: str) -> list[str]:
    """What bash offers for the last of ``words`` (``ergon`` first) after sourcing ``script``: the
    completion function the script registered for `ergon`, called as bash calls it on TAB."""
    line = " ".join(words)
    program = (f'source "$1"; spec=$(complete -p ergon); fn=${{spec#*-F }}; fn=${{fn%% *}}; '
               f'COMP_WORDS=({" ".join(repr(w) for w in words)}); COMP_CWORD={len(words) - 1}; '
               f'COMP_LINE={line!r}; COMP_POINT=${{#COMP_LINE}}; '
               f'"$fn" ergon {words[-1]!r} {words[-2]!r}; printf "%s\\n" "${{COMPREPLY[@]}}"')
    done = subprocess.run(["bash", "--norc", "--noprofile", "-c", program, "bash", str(script)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return sorted(w for w in done.stdout.splitlines() if w)


@pytest.mark.skipif(shutil.which("bash") is None, reason="no bash here")
def test_bash_completes_commands_and_subcommands(scripts: dict[str, str], tmp_path: Path) -> None:
    script = tmp_path / "ergon.bash"
    script.write_text(scripts["bash"])
    assert _complete(script, "ergon", "ru") == ["run", "runs"]
    runs = _complete(script, "ergon", "runs", "")
    assert {"list", "show", "cancel", "resume", "explain"} <= set(runs)
    assert "check" not in runs
    assert _complete(script, "ergon", "check", "--j") == ["--json"]
    assert _complete(script, "ergon", "completion", "show", "") == ["bash", "fish", "zsh"]
    from flows.cli import COMMANDS

    assert set(COMMANDS) <= set(_complete(script, "ergon", ""))
    # where it offers nothing (the files `check` takes), bash completes file names, as without the script
    spec = subprocess.run(["bash", "--norc", "-c", 'source "$1"; complete -p ergon', "bash", str(script)],
                          capture_output=True, text=True, timeout=60).stdout
    assert spec.split() == ["complete", "-o", "default", "-F", "_ergon", "ergon"]


@pytest.mark.skipif(shutil.which("fish") is None, reason="no fish here")
def test_fish_completes_commands_subcommands_and_files(scripts: dict[str, str], tmp_path: Path) -> None:
    script = tmp_path / "ergon.fish"
    script.write_text(scripts["fish"])
    (tmp_path / "kyc.yaml").write_text("")

    def complete(line: str) -> list[str]:
        done = subprocess.run(["fish", "--no-config", "-c", f'source {script}; cd {tmp_path}; complete -C "{line}"'],
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        return sorted(row.split("\t")[0] for row in done.stdout.splitlines())

    assert complete("ergon ru") == ["run", "runs"]
    assert {"list", "show", "cancel", "set-context"} <= set(complete("ergon runs "))
    assert complete("ergon check ky") == ["kyc.yaml"]
    assert complete("ergon completion show ") == ["bash", "fish", "zsh"]


@pytest.mark.parametrize("shell", ["zsh", "fish"])
def test_zsh_and_fish_scripts_name_every_command(scripts: dict[str, str], shell: str, tmp_path: Path) -> None:
    from flows.cli import COMMANDS

    text = scripts[shell]
    for name in (*COMMANDS, "set-context", "--json"):  # commands, a subcommand of `runs`, an option of `check`
        assert name in text, f"the {shell} script lacks {name}"
    if shell == "zsh":  # a positional argument without choices completes file names
        assert "'*:Files or folders to check (default\\: definitions/).:_files'" in text
    if shutil.which(shell):  # where the shell is installed, its parser accepts the script
        path = tmp_path / f"ergon.{shell}"
        path.write_text(text)
        done = subprocess.run([shell, "-n", str(path)], capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr


@pytest.mark.skipif(shutil.which("bash") is None, reason="no bash here")
def test_install_for_bash_writes_the_script_and_the_line_that_loads_it(tmp_path: Path) -> None:
    done = _ergon("completion", "install", "--shell", "bash", home=tmp_path)
    assert done.returncode == 0, done.stderr
    script = tmp_path / ".local/share/bash-completion/completions/ergon"
    assert f"installed in {script}" in done.stdout
    bashrc = (tmp_path / ".bashrc").read_text()
    assert str(script) in bashrc
    # a new interactive bash of that user: ~/.bashrc loads the script, TAB completes
    loaded = tmp_path / "loaded.bash"
    loaded.write_text(f'source "{tmp_path / ".bashrc"}"\n')
    assert _complete(loaded, "ergon", "ru") == ["run", "runs"]
    again = _ergon("completion", "install", "--shell", "bash", home=tmp_path)
    assert again.returncode == 0 and (tmp_path / ".bashrc").read_text() == bashrc  # the line is added once


def test_install_for_fish_and_zsh_and_without_the_startup_line(tmp_path: Path) -> None:
    done = _ergon("completion", "install", "--shell", "fish", home=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "complete -c ergon" in (tmp_path / ".config/fish/completions/ergon.fish").read_text()
    done = _ergon("completion", "install", "--shell", "zsh", home=tmp_path)
    assert done.returncode == 0, done.stderr
    folder = tmp_path / ".zsh/completions"
    assert "#compdef ergon" in (folder / "_cyclopts_ergon").read_text()
    assert f"fpath=({folder} $fpath)" in (tmp_path / ".zshrc").read_text()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    done = _ergon("completion", "install", "--shell", "bash", "--no-startup", "--output", str(elsewhere / "ergon"),
                  home=elsewhere)
    assert done.returncode == 0, done.stderr
    assert (elsewhere / "ergon").exists() and not (elsewhere / ".bashrc").exists()


def test_a_shell_it_cannot_tell_is_named_with_the_option_to_give(tmp_path: Path) -> None:
    done = _ergon("completion", "install", home=tmp_path, SHELL="/bin/tcsh")
    assert done.returncode == 2
    assert done.stderr.startswith("error: cannot tell which shell you use")
    assert "ergon completion install --shell bash" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / ".bashrc").exists()


def test_an_unknown_shell_is_refused_naming_the_choices() -> None:
    done = _ergon("completion", "show", "tcsh")
    assert done.returncode == 2
    assert '"bash", "zsh", "fish"' in done.stdout + done.stderr and "Traceback" not in done.stderr
