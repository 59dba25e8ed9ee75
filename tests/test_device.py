"""Choosing a device: a name that is not one, or a device this machine lacks, is refused with the name and what is
allowed, from LINEAGE_DEVICE and from the commands' --device alike; verify runs on the device it is given."""

from __future__ import annotations

import pytest
import torch

from lineage.__main__ import main
from lineage.device import ENV_VAR, get_device, parse_device
from lineage.measure import verify


def test_a_device_name_is_parsed_or_refused_with_what_is_allowed():
    assert parse_device("cpu") == torch.device("cpu")
    with pytest.raises(ValueError, match=r"--device='gpu' is not a device name; use cpu, cuda, cuda:N or mps"):
        parse_device("gpu", "--device")
    with pytest.raises(ValueError, match=r"--device='meta': use cpu, cuda, cuda:N or mps"):
        parse_device("meta", "--device")
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match=r"--device='cuda:1' but CUDA is not available on this machine"):
            parse_device("cuda:1", "--device")
    else:
        n = torch.cuda.device_count()
        with pytest.raises(ValueError, match=rf"this machine has {n} CUDA device\(s\)"):
            parse_device(f"cuda:{n}", "--device")


def test_the_environment_variable_is_checked_the_same_way(monkeypatch):
    monkeypatch.setenv(ENV_VAR, "cpu")
    assert get_device() == torch.device("cpu")
    monkeypatch.setenv(ENV_VAR, "tpu")
    with pytest.raises(ValueError, match=rf"{ENV_VAR}='tpu' is not a device name"):
        get_device()


def test_verify_on_a_named_device_runs_the_same_checks_on_the_same_inputs(capsys):
    default, on_cpu = verify.run_verify(), verify.run_verify(device="cpu")
    assert [(c.mechanism, c.case, c.mode) for c in default] == [(c.mechanism, c.case, c.mode) for c in on_cpu]
    assert [c.error for c in default] == [c.error for c in on_cpu]  # the same numbers, drawn on the CPU
    assert main(["verify", "--device", "cpu"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "device cpu" and out[-1].startswith(f"{len(default)} passed, 0 failed")


@pytest.mark.parametrize(
    "name, message",
    [("gpu", "--device='gpu' is not a device name")]
    + ([("cuda", "--device='cuda' but CUDA is not available")] if not torch.cuda.is_available() else []),
)
def test_verify_refuses_a_device_it_cannot_use(capsys, name, message):
    with pytest.raises(SystemExit) as exc:
        main(["verify", "--device", name])
    assert exc.value.code == 2
    assert message in capsys.readouterr().err
