"""The NVML probe against the real nvidia-ml-py bindings and a stand-in driver library.

Faked: libnvidia-ml.so.1 (tests/fakes/fake_nvml.c, see conftest.py) and, for the cases a
loaded library cannot show (library missing), the loader. nvidia-smi is faked as a function.
"""

from __future__ import annotations

import os

import pynvml
import pytest

from dsv4_launch.adapters.nvml import probe_gpus
from tests.conftest import B200, H200, RTX_PRO_6000, gpu_spec

NO_SMI = lambda cmd: (None, "nvidia-smi not found on PATH")  # noqa: E731  (nvidia-smi absent)


def test_reads_every_gpu(fake_nvml, tmp_path):
    log = tmp_path / "nvml.log"
    fake_nvml(RTX_PRO_6000, H200, log=log)
    probe = probe_gpus(run_smi=NO_SMI)
    assert probe.source == "nvml" and probe.error is None
    assert [(g.index, g.name, g.capability) for g in probe.gpus] == [
        (0, "NVIDIA RTX PRO 6000 Blackwell Workstation Edition", (12, 0)),
        (1, "NVIDIA H200", (9, 0)),
    ]
    assert probe.gpus[1].uuid == "GPU-90000000-0000-0000-0000-000000000000"
    assert probe.gpus[0].memory_total_bytes == 97887 * 1024 * 1024
    assert probe.driver_version == "550.54.15"
    # NVML is shut down again before anything else runs
    assert log.read_text().split() == ["init", "shutdown"]


def test_mig_devices_are_listed_with_their_parent(fake_nvml):
    fake_nvml(gpu_spec("NVIDIA H200", "GPU-aaaa", "9.0", migs=("MIG-1111", "MIG-2222")))
    probe = probe_gpus(run_smi=NO_SMI)
    assert probe.gpus[0].mig_uuids == ("MIG-1111", "MIG-2222")


@pytest.mark.parametrize(
    "code,fragment",
    [
        (pynvml.NVML_ERROR_DRIVER_NOT_LOADED, "driver not loaded"),
        (pynvml.NVML_ERROR_LIB_RM_VERSION_MISMATCH, "reboot"),
        (pynvml.NVML_ERROR_UNKNOWN, "NVML"),
    ],
)
def test_init_failures_degrade_to_unknown(fake_nvml, code, fragment):
    fake_nvml(RTX_PRO_6000, init_error=code)
    probe = probe_gpus(run_smi=NO_SMI)
    assert probe.gpus == ()
    assert fragment in probe.error and "nvidia-smi" in probe.error


def test_library_missing(fake_nvml):
    def missing():
        raise pynvml.NVMLError(pynvml.NVML_ERROR_LIBRARY_NOT_FOUND)

    class Broken:
        def nvmlInit(self):
            missing()

    probe = probe_gpus(load_nvml=Broken, run_smi=NO_SMI)
    assert probe.gpus == () and "libnvidia-ml.so.1 not found" in probe.error


def test_bindings_missing():
    def no_module():
        raise ModuleNotFoundError("No module named 'pynvml'")

    probe = probe_gpus(load_nvml=no_module, run_smi=NO_SMI)
    assert "nvidia-ml-py" in probe.error


@pytest.mark.parametrize(
    "code,fragment",
    [(pynvml.NVML_ERROR_NO_PERMISSION, "no permission"), (pynvml.NVML_ERROR_GPU_IS_LOST, "lost")],
)
def test_one_bad_device_keeps_its_place(fake_nvml, code, fragment):
    fake_nvml(H200, gpu_spec(uuid="GPU-bad", handle_err=code), B200)
    probe = probe_gpus(run_smi=NO_SMI)
    assert [g.capability for g in probe.gpus] == [(9, 0), None, (10, 0)]
    assert fragment in probe.gpus[1].error
    assert "GPU 1" in probe.error


def test_old_driver_without_compute_capability_asks_nvidia_smi(fake_nvml):
    fake_nvml(gpu_spec(uuid="GPU-old", cc_err=pynvml.NVML_ERROR_FUNCTION_NOT_FOUND))
    smi = "0, GPU-old, NVIDIA RTX PRO 6000, 12.0, 97887\n"
    probe = probe_gpus(run_smi=lambda cmd: (smi, None))
    assert probe.gpus[0].capability == (12, 0)
    assert probe.gpus[0].error is None


def test_old_driver_and_no_nvidia_smi_stays_unknown(fake_nvml):
    fake_nvml(gpu_spec(uuid="GPU-old", cc_err=pynvml.NVML_ERROR_FUNCTION_NOT_FOUND))
    probe = probe_gpus(run_smi=NO_SMI)
    assert probe.gpus[0].capability is None
    assert "too old" in probe.gpus[0].error


def test_nvidia_smi_fallback_when_nvml_fails(fake_nvml):
    fake_nvml(init_error=pynvml.NVML_ERROR_DRIVER_NOT_LOADED)
    calls = []

    def smi(cmd):
        calls.append(cmd)
        return "0, GPU-x, NVIDIA B200, 10.0, 183359\n1, GPU-y, NVIDIA B200, [N/A], 183359\n", None

    probe = probe_gpus(run_smi=smi)
    assert "compute_cap" in calls[0][1]
    assert probe.source == "nvidia-smi"
    assert [g.capability for g in probe.gpus] == [(10, 0), None]
    assert "NVML unavailable" in probe.notes[0]


def test_no_gpu_at_all(fake_nvml):
    fake_nvml()
    probe = probe_gpus(run_smi=NO_SMI)
    assert probe.gpus == () and "no GPU" in probe.error


# -- importing nvidia-ml-py without ctypes.util ----------------------------------------------
# Each case runs in a fresh interpreter (what is in sys.modules is the point); the real
# nvidia-ml-py is imported, nothing is faked but, in two cases, a pynvml module put first on
# the path.

STDLIB_PULLED_IN = ("ctypes.util", "subprocess", "shutil", "tempfile")


def _fresh(code: str, tmp_path, path: str = "") -> dict:
    import json
    import subprocess
    import sys

    from tests.conftest import clean_env

    env = clean_env(tmp_path)
    if path:
        env["PYTHONPATH"] = path + os.pathsep + env.get("PYTHONPATH", "")
    prelude = "import json, sys\nfrom dsv4_launch.adapters.nvml import _import_pynvml\n"
    done = subprocess.run([sys.executable, "-c", prelude + code], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_pynvml_is_imported_without_ctypes_util_and_its_find_library_still_works(tmp_path):
    seen = _fresh(
        "nvml = _import_pynvml()\n"
        f"loaded = [m for m in {STDLIB_PULLED_IN!r} if m in sys.modules]\n"
        "found = nvml.find_library('c')\n"  # the stand-in loads the real ctypes.util now
        "import ctypes.util\n"
        "print(json.dumps({'loaded': loaded, 'found': found, 'real': ctypes.util.find_library('c'),\n"
        "    'file': getattr(sys.modules['ctypes.util'], '__file__', None),\n"
        "    'nvml': nvml.nvmlInit.__module__, 'again': _import_pynvml() is nvml}))\n",
        tmp_path,
    )
    assert seen["loaded"] == []
    assert seen["found"] == seen["real"] and seen["found"]
    assert seen["file"] and seen["file"].endswith("util.py")  # the real module, not the stand-in
    assert seen["nvml"] == "pynvml" and seen["again"] is True


def test_when_ctypes_util_is_already_loaded_pynvml_gets_the_real_one(tmp_path):
    seen = _fresh(
        "import ctypes.util\nnvml = _import_pynvml()\n"
        "print(json.dumps({'same': nvml.find_library is ctypes.util.find_library,\n"
        "    'module': sys.modules['ctypes.util'] is ctypes.util}))\n",
        tmp_path,
    )
    assert seen == {"same": True, "module": True}


def test_a_pynvml_that_fails_to_import_leaves_no_stand_in_behind(tmp_path):
    (tmp_path / "fakes").mkdir()
    (tmp_path / "fakes" / "pynvml.py").write_text("from ctypes.util import find_library\nraise ImportError('broken')\n")
    seen = _fresh(
        "try:\n    _import_pynvml()\n    error = None\nexcept ImportError as exc:\n    error = str(exc)\n"
        "left = 'ctypes.util' in sys.modules\n"
        "import ctypes.util\n"
        "print(json.dumps({'error': error, 'left': left, 'file': getattr(ctypes.util, '__file__', None)}))\n",
        tmp_path,
        path=str(tmp_path / "fakes"),
    )
    assert seen["error"] == "broken" and seen["left"] is False
    assert seen["file"] and seen["file"].endswith("util.py")


def test_a_pynvml_asking_ctypes_util_for_another_name_gets_the_real_one(tmp_path):
    # A later nvidia-ml-py may use more of ctypes.util: anything but find_library is read from
    # the real module at once.
    (tmp_path / "fakes").mkdir()
    (tmp_path / "fakes" / "pynvml.py").write_text("from ctypes.util import find_library, test\n")
    seen = _fresh(
        "nvml = _import_pynvml()\nimport ctypes.util\n"
        "print(json.dumps({'test': nvml.test is ctypes.util.test, 'real': hasattr(ctypes.util, '__file__')}))\n",
        tmp_path,
        path=str(tmp_path / "fakes"),
    )
    assert seen == {"test": True, "real": True}


@pytest.mark.parametrize("start", ["threading", "_thread"])
def test_with_other_threads_running_pynvml_is_imported_plainly(tmp_path, start):
    # Another thread could import ctypes.util while the stand-in is in place: no stand-in then,
    # also for a thread started without the threading module (threading.active_count() misses it).
    worker = {
        "threading": "import threading\nstop = threading.Event()\n"
                     "worker = threading.Thread(target=stop.wait)\nworker.start()\n",
        "_thread": "import _thread, time\nstop = _thread.allocate_lock()\nstop.acquire()\nstarted = []\n"
                   "def wait():\n    started.append(1)\n    stop.acquire()\n"
                   "_thread.start_new_thread(wait, ())\n"
                   "while not started:\n    time.sleep(0.001)\n",
    }[start]
    finish = {"threading": "stop.set()\nworker.join()\n", "_thread": "stop.release()\n"}[start]
    seen = _fresh(
        worker + "nvml = _import_pynvml()\n" + finish +
        "import ctypes.util\n"
        "print(json.dumps({'same': nvml.find_library is ctypes.util.find_library}))\n",
        tmp_path,
    )
    assert seen == {"same": True}
