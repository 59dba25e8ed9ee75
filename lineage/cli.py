"""What every ``python -m lineage`` command shares: errors that name the flag typed, output paths checked before any
work, and the line that says what an interrupted run kept. No torch here: the parsers are built from it quickly."""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import signal
from pathlib import Path

# The configs' field names and the flags that set them (the messages a user sees name the flag they typed).
FLAGS = {
    "vocab_size": "--vocab",
    "seq_len": "--seq-len",
    "n_pairs": "--n-pairs",
    "n_stacks": "--n-stacks",
    "d_model": "--d-model",
    "n_layers": "--layers",
    "n_heads": "--heads",
    "lr": "--lr",
    "batch_size": "--batch",
    "max_steps": "--steps",
    "max_seconds": "--seconds",
    "target_accuracy": "--target",
    "eval_every": "--eval-every",
    "patience": "--patience",
    "min_delta": "--min-delta",
    "mixer": "--mixers",
}


def in_flags(message: str) -> str:
    """``message`` with every config field name replaced by the flag that sets it."""
    return re.sub(r"\b(" + "|".join(FLAGS) + r")\b", lambda m: FLAGS[m.group(1)], message)


def int_list(text: str) -> list[int]:
    """An argparse type: comma-separated integers ("4,8,16"), at least one."""
    parts = [x.strip() for x in text.split(",") if x.strip()]
    try:
        values = [int(x) for x in parts]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers such as 4,8,16, got {text!r}") from None
    if not values:
        raise argparse.ArgumentTypeError(f"expected at least one integer, such as 4,8,16, got {text!r}")
    return values


def check_writable(path: str | os.PathLike, flag: str) -> Path:
    """Raise ValueError naming ``flag`` unless ``path`` can be written (checked before any work starts)."""
    p = Path(path)
    if p.is_dir():
        raise ValueError(f"{flag} {str(p)!r} is a directory; give a file path")
    if not p.parent.is_dir():
        raise ValueError(f"{flag} {str(p)!r}: the folder {str(p.parent)!r} does not exist")
    if not os.access(p if p.exists() else p.parent, os.W_OK):
        raise ValueError(f"{flag} {str(p)!r} cannot be written (no permission)")
    return p


def given(argv: list[str], *flags: str) -> list[str]:
    """Which of ``flags`` the user typed (``--flag value`` or ``--flag=value``)."""
    return [f for f in flags if any(a == f or a.startswith(f + "=") for a in argv)]


def refuse(parser: argparse.ArgumentParser, argv: list[str], flags: tuple[str, ...], unless: str) -> None:
    """Exit with one line if any of ``flags`` was typed where it does not apply (``unless`` says where it does)."""
    if typed := given(argv, *flags):
        parser.error(f"{', '.join(typed)} {'applies' if len(typed) == 1 else 'apply'} only {unless}")


def interrupted(kept: int, total: int, where: str, resume: str) -> str:
    """The line printed on Ctrl-C: what was kept, where, and how to go on."""
    return f"\ninterrupted: {kept} of {total} finished point(s) kept in {where}. {resume}"


def duration(seconds: float) -> str:
    """A wall time for an estimate: seconds under a minute and a half, else minutes, else hours."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def _stop(signum, frame):
    raise KeyboardInterrupt


@contextlib.contextmanager
def interruptible():
    """Inside the block, SIGTERM (a scheduler's or ``kill``'s stop) ends the run as Ctrl-C does, so the finished
    points are reported; and SIGINT does too even where a shell started the run in the background with it ignored."""
    before = {sig: signal.signal(sig, _stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler)
