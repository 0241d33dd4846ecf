"""A PEP 517 build backend with no requirements, for packages the tests install
with no network: it packs the module folder named after the project into a
pure-Python wheel. A file named sleep_seconds next to pyproject.toml makes the
build take that long (for tests of the build step's time limit)."""
import base64
import hashlib
import os
import time
import tomllib
import zipfile


def _project():
    with open("pyproject.toml", "rb") as f:
        project = tomllib.load(f)["project"]
    return project["name"], project["version"]


def _record_line(path, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{path},sha256={digest},{len(data)}"


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    if os.path.exists("sleep_seconds"):
        with open("sleep_seconds") as f:
            time.sleep(float(f.read()))
    name, version = _project()
    module = name.replace("-", "_")
    dist_info = f"{module}-{version}.dist-info"
    files = {}
    for root, _, names in os.walk(module):
        for n in sorted(names):
            if n.endswith(".pyc"):
                continue
            path = os.path.join(root, n)
            with open(path, "rb") as f:
                files[path.replace(os.sep, "/")] = f.read()
    files[f"{dist_info}/METADATA"] = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n".encode()
    files[f"{dist_info}/WHEEL"] = b"Wheel-Version: 1.0\nGenerator: sless-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    record = [_record_line(p, d) for p, d in files.items()] + [f"{dist_info}/RECORD,,"]
    files[f"{dist_info}/RECORD"] = ("\n".join(record) + "\n").encode()
    wheel = f"{module}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(os.path.join(wheel_directory, wheel), "w") as z:
        for path, data in files.items():
            z.writestr(path, data)
    return wheel
