"""The README's main demo (examples/python/train_and_serve.py) runs end to end: training eagerly and staged,
a checkpoint restored into a fresh model, a SavedModel served by the C++ example with the same predictions."""
import glob
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_train_and_serve_demo(tmp_path):
    found = sorted(glob.glob(os.path.join(ROOT, "build", "*", "example_serve_saved_model")), key=os.path.getmtime)
    assert found, "example_serve_saved_model is not built (EMBER_BUILD_EXAMPLES)"
    # with this interpreter's flags: -S only where the parent has it (then PYTHONPATH finds this ember)
    proc = subprocess.run([sys.executable, *(["-S"] if sys.flags.no_site else []),
                           os.path.join(ROOT, "examples", "python", "train_and_serve.py"),
                           "--serve-binary", found[-1], "--workdir", str(tmp_path)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    assert "ember.function" in out and "x faster" in out
    accuracy = float(out.split("test accuracy ")[1].split()[0])
    assert accuracy > 0.85, out
    restored = float(out.split("a fresh model restored from it scores ")[1].split()[0])
    assert restored == accuracy, out
    assert "297/297 predictions equal Python's" in out, out
    assert os.path.exists(tmp_path / "saved_model" / "saved_model.pb")
