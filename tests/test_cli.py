"""The `sonicsampler` command line: the demonstration, bench's fallback without a GPU, help texts.

The subprocess tests start Python with TRITON_INTERPRET removed from the environment and (through
CUDA_VISIBLE_DEVICES="") no visible GPU, as a user's shell would be: the command itself has to get
the interpreter switched on before sonicsampler's kernels are decorated, or the kernel launch fails.
"""
import os
import subprocess
import sys

import pytest

from sonicsampler import cli


def _run(*args, timeout=300):
    env = {k: v for k, v in os.environ.items() if k not in ("TRITON_INTERPRET", cli._CHILD_ENV)}
    env["CUDA_VISIBLE_DEVICES"] = ""  # no GPU, even on a GPU machine
    return subprocess.run([sys.executable, *args], env=env, capture_output=True, text=True, timeout=timeout)


def _explain(p):
    return f"exit {p.returncode}\n--- stdout\n{p.stdout}\n--- stderr\n{p.stderr[-4000:]}"


def test_demo_runs_on_cpu_and_is_exact():
    p = _run("-m", "sonicsampler.cli", "demo")
    assert p.returncode == 0, _explain(p)
    assert "exact: yes" in p.stdout, _explain(p)
    assert "interpreter" in p.stdout
    assert "reference.sample" in p.stdout and "greedy tokens equal sonicsampler.topk's top-1 indices: yes" in p.stdout
    # One table line per row, each with a zero difference.
    lines = [ln.split() for ln in p.stdout.splitlines() if ln.strip()[:1].isdigit() and "[" in ln]
    assert len(lines) == cli.DEMO_ROWS, _explain(p)
    assert all(ln[-2] == "0" and ln[-1] == "yes" for ln in lines), _explain(p)


def test_bench_without_gpu_says_so_and_falls_back_to_the_demo():
    p = _run("-m", "sonicsampler", "bench", "--quick", "--case", "topk")
    assert p.returncode == 0, _explain(p)
    first = p.stdout.splitlines()[0]
    assert "No CUDA GPU found" in first, _explain(p)
    assert "exact: yes" in p.stdout, _explain(p)
    assert "speedup" not in p.stdout  # no benchmark ran


def test_demo_in_process_reports_exact(capsys):
    # conftest has set TRITON_INTERPRET before any import on a CPU machine: no child process is needed.
    assert cli.main(["demo", "--rows", "2", "--vocab", "700", "-k", "8"]) == 0
    out = capsys.readouterr().out
    assert "exact: yes" in out


def test_demo_exits_1_when_the_kernel_is_wrong(monkeypatch, capsys):
    import sonicsampler
    from sonicsampler import reference

    def off_by_one(logits, k, **kw):
        v, i = reference.topk(logits, k)
        i = i.clone()
        i[-1, -1] += 1
        return v, i

    monkeypatch.setattr(sonicsampler, "topk", off_by_one)
    assert cli.main(["demo", "--rows", "2", "--vocab", "700", "-k", "8"]) == 1
    out = capsys.readouterr().out
    assert "exact: no" in out and "exact: yes" not in out


def test_demo_exits_1_when_the_kernel_raises(monkeypatch, capsys):
    import sonicsampler

    def broken(logits, k, **kw):
        raise RuntimeError("no kernel today")

    monkeypatch.setattr(sonicsampler, "topk", broken)
    assert cli.main(["demo", "--rows", "2", "--vocab", "700"]) == 1
    out = capsys.readouterr().out
    assert "no kernel today" in out and "exact: no" in out


def test_bench_without_benchmarks_folder_exits_2(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(cli, "benchmarks_dir", lambda: tmp_path / "benchmarks")
    monkeypatch.setattr(cli, "_gpu_available", lambda: True)
    assert cli.main(["bench", "--quick"]) == 2
    err = capsys.readouterr().err
    assert "benchmarks folder is not there" in err


def test_help_texts(capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(["--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    assert "bench" in out and "demo" in out and "GPU" in out
    with pytest.raises(SystemExit) as e:
        cli.main(["bench", "--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    for opt in ("--case", "--quick", "--rows", "--vocab", "--out"):
        assert opt in out
    assert "without a GPU" in out
    with pytest.raises(SystemExit) as e:
        cli.main(["demo", "--help"])
    assert e.value.code == 0
    assert "reference.topk" in capsys.readouterr().out


def test_no_command_is_an_error(capsys):
    with pytest.raises(SystemExit) as e:
        cli.main([])
    assert e.value.code == 2
