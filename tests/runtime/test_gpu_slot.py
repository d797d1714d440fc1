"""`gpualign --local-gpus N`: each process takes its own free device for its whole life."""

from __future__ import annotations

import os
import subprocess
import sys
import threading

from paths import REPO

from gpualign_plugin.runtime.gpu_slot import take_gpu_slot


def test_concurrent_holders_get_different_devices_and_a_third_waits(tmp_path):
    locks = str(tmp_path / "locks")
    first_env = {"CUDA_VISIBLE_DEVICES": "4,6"}
    second_env = dict(first_env)
    first = take_gpu_slot(2, locks, first_env)
    second = take_gpu_slot(2, locks, second_env)
    assert (first[0], second[0]) == ("4", "6")
    assert (first_env["CUDA_VISIBLE_DEVICES"], second_env["CUDA_VISIBLE_DEVICES"]) == ("4", "6")
    third_env = {"CUDA_VISIBLE_DEVICES": "4,6"}
    waiter = threading.Thread(target=lambda: third_env.update(slot=take_gpu_slot(2, locks, third_env)))
    waiter.start()
    waiter.join(1.5)
    assert waiter.is_alive(), "a third holder must wait while both devices are taken"
    second[1].close()
    waiter.join(10)
    assert not waiter.is_alive() and third_env["CUDA_VISIBLE_DEVICES"] == "6"
    first[1].close()
    third_env["slot"][1].close()


def test_one_gpu_or_slurm_changes_nothing(tmp_path):
    assert take_gpu_slot(1, str(tmp_path / "a"), {}) is None
    environ = {"SLURM_JOB_ID": "17", "CUDA_VISIBLE_DEVICES": "3"}
    assert take_gpu_slot(4, str(tmp_path / "b"), environ) is None
    assert environ["CUDA_VISIBLE_DEVICES"] == "3"
    assert not os.path.exists(tmp_path / "a") and not os.path.exists(tmp_path / "b")


def test_gpualign_takes_a_slot_for_the_whole_run_with_the_options_anywhere(tmp_path):
    """The global options stand before or after the subcommand; the slot's lock is held."""
    fasta = tmp_path / "rna.fa"
    fasta.write_text(">r\nGGGAAAUCC\n")
    env = {key: value for key, value in os.environ.items()
           if key not in ("CUDA_VISIBLE_DEVICES", "SLURM_JOB_ID")}
    env["PYTHONPATH"] = REPO + os.pathsep + env.get("PYTHONPATH", "")
    env["CUDA_VISIBLE_DEVICES"] = "5,7"
    locks = str(tmp_path / "locks")
    held = take_gpu_slot(2, locks, {"CUDA_VISIBLE_DEVICES": "5,7"})
    for argv in (["-v", "--local-gpus", "2", "--gpu-lock-dir", locks, "fold"],
                 ["fold", "--local-gpus", "2", "--gpu-lock-dir", locks, "-v"]):
        result = subprocess.run([sys.executable, "-m", "gpualign_plugin.cli.main", *argv,
                                 "--input", str(fasta), "--out", str(tmp_path / "out.dbn")],
                                env=env, capture_output=True, text=True, timeout=120)
        assert result.returncode == 0, result.stderr
        assert "CUDA_VISIBLE_DEVICES=7" in result.stderr, result.stderr
    held[1].close()
