"""The command line: list, describe, run; bad input is one line and exit status 2."""

import json
import subprocess
import sys

from simulators import api


def cli(*args):
    return subprocess.run([sys.executable, "-m", "simulators", *args], capture_output=True, text=True, timeout=120)


def test_list_names_every_simulator():
    out = cli("list")
    assert out.returncode == 0
    for name in api.SIMULATORS:
        assert name in out.stdout


def test_describe_prints_parameters_and_metrics():
    out = cli("describe", "kv_cache")
    assert out.returncode == 0
    assert "context_tokens" in out.stdout and "kv_bytes_per_token" in out.stdout


def test_run_kv_cache_json_gives_131072_bytes_per_token():
    out = cli("run", "kv_cache", "--set", "model=llama-3-8b", "--json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["metrics"]["kv_bytes_per_token"] == 131072


def test_custom_model_from_the_command_line():
    cfg = '{"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 100}'
    out = cli("run", "kv_cache", "--set", f"model={cfg}", "--json")
    # 2 (K, V) x 2 layers x 2 KV heads x 16 dims x 2 bytes = 256 B per token.
    assert json.loads(out.stdout)["metrics"]["kv_bytes_per_token"] == 256


def test_bad_input_is_one_line_and_exit_2():
    for args in (
        ["run", "kv_cache", "--set", "context_tokens=-5"],
        ["run", "kv_cache", "--set", "nope=1"],
        ["run", "kv_cache", "--set", "model=gpt-7"],
        ["run", "kv_cache", "--set", "broken"],
        ["run", "no_such_sim"],
        ["describe", "no_such_sim"],
    ):
        out = cli(*args)
        assert out.returncode == 2, args
        assert "Traceback" not in out.stderr
        assert out.stderr.strip().count("\n") == 0 and out.stderr.startswith("error:"), out.stderr


def test_a_broken_catalogue_is_one_line_naming_its_file_and_exit_2(tmp_path):
    """Contributor review: a typo in simulators/data/gpus.toml printed a traceback, since the command
    line imports the catalogues before it handles errors. A copy of the package with one key misspelt."""
    import shutil
    from pathlib import Path

    shutil.copytree(Path(api.__file__).parent, tmp_path / "simulators", ignore=shutil.ignore_patterns("__pycache__"))
    gpus = tmp_path / "simulators" / "data" / "gpus.toml"
    gpus.write_text(gpus.read_text(encoding="utf-8").replace("source = ", "sorce = ", 1), encoding="utf-8")
    out = subprocess.run(
        [sys.executable, "-m", "simulators", "list"], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr
    assert out.stderr.startswith("error: simulators/data/gpus.toml:") and "sorce" in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1
