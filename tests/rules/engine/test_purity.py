import subprocess
import sys


def test_the_engine_imports_nothing_from_django():
    code = "import sys, rules.engine; print(sorted(m for m in sys.modules if m.split('.')[0] == 'django'))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert out.stdout.strip() == "[]"
