"""The shell deny list over every quoting, bracing and wrapping of a dangerous target, the
commands it must let through, and the allow-listed child environment."""

from __future__ import annotations

import posixpath
import re
import shlex
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.tools.builtin.shell_policy import (
    UNPARSEABLE,
    ShellPolicy,
    child_environment,
    passes,
    secret_passthrough,
)

RM = "recursive rm of /, $HOME or a system directory"
CHMOD = "recursive chmod/chown of / or a system directory"
POLICY = ShellPolicy.from_patterns()


@pytest.mark.parametrize(
    "command",
    [
        'rm -rf "$HOME"',
        "rm -rf '/'",
        'rm -rf "${HOME}"/',
        "rm -r -f -- /",
        "rm -rf ~/",
        "\\rm -rf /",
        "/bin/rm -rf //",
        "/usr/bin/rm -rf /",
        "rm -rf /.",
        "rm -rf /./",
        "sudo rm -rf /*",
        "rm -rf /",
        "rm -fr ~",
        "rm -Rf $HOME",
        "rm -rf ${HOME}/*",
        'rm -rf "$HOME/"',
        "rm -rf ${HOME:?}/",
        "rm -rf ~root",
        "rm -rf ~/..",
        "rm -rf /usr/",
        "rm -rf /etc/.",
        "rm -rf /var/*",
        "rm --recursive --force /",
        "rm --rec -f /",
        "rm / -rf",
        'r"m" -r"f" /',
        "'rm' '-rf' '/'",
        "rm -rf $'/'",
        "rm -rf $'\\x2f'",
        "rm${IFS}-rf${IFS}/",
        "rm -rf /{tmp,etc}",
        "rm 2>/dev/null -rf /",
        "rm -rf '~'",
        "rm -rf '$HOME'",
        "sudo -u root -- rm -rf /",
        "env -i A=1 nice -n 5 timeout 10 /usr/bin/rm -rf ~/*",
        "command rm -rf /",
        "exec rm -rf /",
        "nohup rm -rf / &",
        "xargs rm -rf /",
        "busybox rm -rf /",
        "cd /tmp && rm -rf /",
        "true; rm -rf /",
        "ls | rm -rf /",
        "(rm -rf /)",
        "{ rm -rf /; }",
        "if true; then rm -rf /; fi",
        "for x in a; do rm -rf ~; done",
        "f() { rm -rf /; }; f",
        'echo "$(rm -rf /)"',
        "echo `rm -rf ~`",
        "x=$(rm -rf /)",
        "sh -c 'rm -rf /'",
        'bash -lc "rm -rf $HOME"',
        "sh -c 'sudo rm -rf \"$HOME\"'",
        "su -c 'rm -rf /' root",
        'eval "rm -rf /"',
        "sh <<EOF\nrm -rf ~\nEOF",
        "bash <<< 'rm -rf /'",
        "echo rm -rf / | sh",
        'sh -c "sh -c \\"rm -rf /\\""',
    ],
)
def test_recursive_rm_of_protected_targets_is_refused(command: str) -> None:
    assert POLICY.refusal(command) == RM


@pytest.mark.parametrize(
    ("command", "label"),
    [
        ("rm -rf --no-preserve-root /", RM),
        ("rm --no-preserve-root -r /tmp/x", "rm --no-preserve-root"),
        (":(){ :|:& };:", "fork bomb"),
        ("bomb(){ bomb | bomb & }; bomb", "fork bomb"),
        ("mkfs.ext4 /dev/sda1", "mkfs"),
        ("sudo /sbin/mkfs -t xfs /dev/nvme0n1", "mkfs"),
        ("wipefs -a /dev/sdb", "wipefs"),
        ("dd if=/dev/zero of=/dev/sda bs=1M", "dd to a block device"),
        ('dd if=/dev/zero of="/dev/nvme0n1"', "dd to a block device"),
        ("echo x > /dev/sda", "write to a block device"),
        ("cat img | sudo tee /dev/mmcblk0", "write to a block device"),
        ("shutdown -h now", "shutdown/reboot"),
        ("echo bye; reboot", "shutdown/reboot"),
        ("sudo 'poweroff'", "shutdown/reboot"),
        ("/sbin/halt", "shutdown/reboot"),
        ("init 0", "init runlevel 0/6"),
        ("systemctl poweroff", "systemctl power action"),
        ("systemctl --force reboot", "systemctl power action"),
        ("chmod -R 777 /", CHMOD),
        ('chmod -R 777 "/"', CHMOD),
        ("chown -R nobody: /etc/", CHMOD),
        ("chgrp --recursive staff //", CHMOD),
    ],
)
def test_other_built_in_rules(command: str, label: str) -> None:
    assert POLICY.refusal(command) == label


@pytest.mark.parametrize(
    "command",
    [
        "rm -rf ./build",
        "rm -rf build/ dist/",
        "rm -rf /tmp/hatchway-test",
        "rm -rf ~/project/build",
        'rm -rf "$HOME/.cache/pip"',
        "rm -rf ./'~'",
        "rm -f /",  # not recursive: fails on a directory
        "rm -rf $BUILD_DIR",  # unknown until it runs: a tripwire cannot know
        'echo "rm -rf /"',
        "echo 'rm -rf ~'",
        "printf '%s\\n' 'rm -rf /'",
        "git commit -m 'rm -rf / was a bad idea; reboot later'",
        "ls /",
        "ls -la ~",
        "du -sh /usr",
        "chmod 755 /usr/local/bin/tool",
        "chown -R me ~",
        "echo reboot-notes",
        "grep shutdown log",
        "systemctl status reboot.target",
        "find . -name '*.pyc' -exec rm {} +",
        "cat <<'EOF' > notes.txt\nit's fine: rm -rf / is only text here\nEOF",
        "awk '{print $1, $2}' data.txt",
        "python3 -c 'import shutil; print(1)'",
        "f() { echo once; f2; }; f",
    ],
)
def test_ordinary_commands_pass(command: str) -> None:
    assert POLICY.refusal(command) is None


@pytest.mark.parametrize(
    ("command", "label"),
    [
        ('rm -rf "/', RM),  # the fallback regexes name the rule
        ("rm -rf / 'oops", RM),
        ("echo 'unbalanced", UNPARSEABLE),
        ("if true; then ls", UNPARSEABLE),
        ("echo a; ; echo b", UNPARSEABLE),
        ("echo $(ls", UNPARSEABLE),
        ('reboot; echo "x', "shutdown/reboot"),
    ],
)
def test_unparseable_commands_are_refused(command: str, label: str) -> None:
    assert POLICY.refusal(command) == label


def test_administrator_patterns_see_raw_and_collapsed_text() -> None:
    policy = ShellPolicy.from_patterns([r"curl -s http", r"\bgit\s+push\b"])
    assert policy.refusal("curl    -s\n http://x") == "deny_patterns[0]"
    assert policy.refusal("echo 'git push'") == "deny_patterns[1]"  # regexes see data too
    assert policy.refusal("git status") is None
    assert policy.refusal("git push 'unbalanced") == "deny_patterns[1]"


def test_a_lone_surrogate_does_not_break_the_check() -> None:
    assert POLICY.refusal("echo \ud83d; rm -rf /") == RM
    assert POLICY.refusal("echo \ud83d") is None


# Property: every spelling of a dangerous target that /bin/sh reads as one is refused.

HOME_DIR = "/home/hatchway-prop"
PROTECTED = {"/", "~/", "/etc", "/usr", "/var", "/bin"}


def _char_quoted(char: str, style: int) -> str:
    if style == 1:
        return "\\" + char
    if style == 2:
        return f"'{char}'"
    if style == 3:
        return f'"{char}"'
    return char


@st.composite
def quoted_literal(draw: st.DrawFn, text: str) -> str:
    """``text`` as one shell word in a random mix of bare, escaped and quoted pieces."""
    whole = draw(st.sampled_from(["mixed", "single", "double", "bare"]))
    if whole == "single":
        return f"'{text}'"
    if whole == "double":
        return f'"{text}"'
    if whole == "bare":
        return text
    return "".join(_char_quoted(c, draw(st.integers(0, 3))) for c in text)


@st.composite
def dangerous_target(draw: st.DrawFn) -> str:
    base = draw(st.sampled_from(["root", "home", "/etc", "/usr", "/var", "/bin"]))
    suffix = draw(st.sampled_from(["", "/", "//", "/.", "/./", "/*", "/.*", "/./*", "//."]))
    if base == "home":
        head = draw(
            st.sampled_from(
                ["~", "$HOME", "${HOME}", '"$HOME"', '"${HOME}"', "${HOME:?}", '"${HOME%/}"']
            )
        )
        return head + (draw(quoted_literal(suffix)) if suffix else "")
    text = ("" if base == "root" else base) + suffix or "/"
    if base != "root" and not suffix and draw(st.booleans()):
        text += "/"
    return draw(quoted_literal(text))


NAMES = [
    "rm",
    "\\rm",
    '"rm"',
    "'rm'",
    "r''m",
    "/bin/rm",
    "/usr/bin/rm",
    "command rm",
    "sudo rm",
    "sudo -u root rm",
    "env rm",
    "env LC_ALL=C rm",
    "nohup rm",
    "exec rm",
    "nice -n 5 rm",
    "timeout 5 rm",
]
FLAGS = ["-rf", "-fr", "-Rf", "-r -f", "-r", "-R", "--recursive", '"-rf"', "-r'f'"]


@st.composite
def dangerous_command(draw: st.DrawFn) -> tuple[str, str]:
    target = draw(dangerous_target())
    name = draw(st.sampled_from(NAMES))
    flags = draw(st.sampled_from(FLAGS))
    form = draw(st.sampled_from(["flags first", "target first", "double dash"]))
    if form == "target first":
        command = f"{name} {target} {flags}"
    elif form == "double dash":
        command = f"{name} {flags} -- {target}"
    else:
        command = f"{name} {flags} {target}"
    context = draw(
        st.sampled_from(
            [
                "{}",
                "true; {}",
                "cd . && {}",
                "echo ok | {}",
                "({})",
                "{{ {}; }}",
                'echo "$({})"',
                "if true; then {}; fi",
                "sh -c {q}",
                "bash -c {q}",
                "eval {q}",
            ]
        )
    )
    return context.format(command, q=shlex.quote(command)), target


def sh_reads(word: str) -> list[str]:
    """The fields /bin/sh (globbing off) makes of ``word``, HOME set to :data:`HOME_DIR`."""
    printed = subprocess.run(
        ["/bin/sh", "-f", "-c", f"printf '%s\\n' {word}"],
        env={"HOME": HOME_DIR, "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=True,
    )
    return printed.stdout.splitlines()


def meaning(path: str) -> str:
    """A path as ``~/…`` or ``/…`` with slashes, dots and trailing globs collapsed, worked out
    independently of the code under test (a literal ``~`` is read as home, as documented)."""
    prefix = ""
    if path.startswith(HOME_DIR):
        prefix, path = "~", path[len(HOME_DIR) :]
    elif path.startswith("~"):
        prefix, path = "~", path[1:]
    if path and not path.startswith("/"):
        return "relative"
    parts = [p for p in posixpath.normpath(re.sub("/+", "/", "/" + path)).split("/") if p]
    while parts and parts[-1] in ("*", ".*"):
        parts.pop()
    return prefix + "/" + "/".join(parts)


@settings(max_examples=300, deadline=None)
@given(dangerous_command())
def test_every_spelling_of_a_dangerous_rm_is_refused(case: tuple[str, str]) -> None:
    command, target = case
    fields = sh_reads(target)
    assert len(fields) == 1 and meaning(fields[0]) in PROTECTED, (
        target,
        fields,
    )  # the generator is right
    assert POLICY.refusal(command) == RM, command


@settings(max_examples=200, deadline=None)
@given(dangerous_command(), st.sampled_from(["echo {}", "printf '%s\\n' {}", "git log --grep {}"]))
def test_a_dangerous_command_as_quoted_data_passes(case: tuple[str, str], wrapper: str) -> None:
    command, _ = case
    assert POLICY.refusal(wrapper.format(shlex.quote(command))) is None


@settings(max_examples=200, deadline=None)
@given(
    st.sampled_from(NAMES),
    st.sampled_from(FLAGS),
    st.sampled_from(["./build", "build/", "~/project/build", "$HOME/.cache/x", "/tmp/x/y"]),
    st.data(),
)
def test_ordinary_targets_pass_in_every_spelling(
    name: str, flags: str, path: str, data: st.DataObject
) -> None:
    head, _, rest = path.partition("/")
    target = (
        head + "/" + data.draw(quoted_literal(rest))
        if head in ("~", "$HOME")
        else data.draw(quoted_literal(path))
    )
    assert POLICY.refusal(f"{name} {flags} {target}") is None


# The child environment.


@pytest.mark.parametrize(
    ("name", "kept"),
    [
        ("PATH", True),
        ("HOME", True),
        ("LANG", True),
        ("LANGUAGE", True),
        ("LC_ALL", True),
        ("LC_MESSAGES", True),
        ("TZ", True),
        ("TERM", True),
        ("USER", True),
        ("LOGNAME", True),
        ("SHELL", True),
        ("TMPDIR", True),
        ("EDITOR", False),
        ("MYSQL_PWD", False),
        ("DATABASE_URL", False),
        ("REDIS_URL", False),
        ("SENTRY_DSN", False),
        ("GH_PAT", False),
        ("SOME_RANDOM", False),
        ("HATCHWAY_STATE_DIR", False),
        ("path", False),
    ],
)
def test_base_variables(name: str, kept: bool) -> None:
    assert passes(name) is kept


@pytest.mark.parametrize(
    ("name", "passthrough", "kept"),
    [
        ("PIP_INDEX_URL", ["PIP_INDEX_URL"], True),
        ("PIP_INDEX_URL", ["PIP_*"], True),
        ("PIP", ["PIP_*"], False),
        ("pip_index_url", ["PIP_*"], False),
        ("HTTPS_PROXY", ["*_PROXY"], True),
        ("NO_PROXY_LIST", ["*_PROXY"], False),
        ("GH_PAT", ["GH_PAT"], True),
    ],
)
def test_passthrough_names_and_globs(name: str, passthrough: list[str], kept: bool) -> None:
    assert passes(name, passthrough) is kept


def test_child_environment_sets_pwd_to_the_workspace(tmp_path: Path) -> None:
    environ = {"PATH": "/bin", "PWD": "/daemon/dir", "DATABASE_URL": "postgres://u:p@h/d"}
    env = child_environment(environ, workspace=tmp_path, passthrough=["PWD"])
    assert env == {"PATH": "/bin", "PWD": str(tmp_path)}


def test_secret_passthrough_names_what_an_administrator_exposed() -> None:
    environ = {"DB_PASSWORD": "x", "DB_HOST": "h", "GH_TOKEN": "t"}
    assert secret_passthrough(["DB_*", "GH_TOKEN", "PIP_INDEX_URL"], environ) == [
        "DB_PASSWORD",
        "GH_TOKEN",
    ]
    assert secret_passthrough(["PIP_*", "NODE_ENV"], environ) == []
