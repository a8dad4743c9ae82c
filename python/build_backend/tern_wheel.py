"""tern_wheel.py: the PEP 517 build backend of `pip install ./python`, from the standard library
alone (pip's isolated build environment has no setuptools offline).

The wheel holds the package python/tern and, when one is found, libtern itself (tern/libtern.so.0:
the "bundled build"): TERN_LIBRARY if set, else the checkout's build/libtern.so. Without one, the
wheel is pure Python and tern/_lib.py finds libtern at import time (pkg-config, the loader path).
"""
import base64
import hashlib
import os
import sys
import sysconfig
import zipfile

NAME, VERSION = "tern", "0.1.0"
HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # python/
PACKAGE = os.path.join(HERE, "tern")


def _library():
    for path in (os.environ.get("TERN_LIBRARY"), os.path.join(HERE, "..", "build", "libtern.so")):
        if path and os.path.exists(path):
            return os.path.realpath(path)
    return None


def _tag(bundled):
    if not bundled:
        return "py3-none-any"
    return f"py3-none-{sysconfig.get_platform().replace('-', '_').replace('.', '_')}"


def _record_line(name, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def _files(lib):
    for name in sorted(os.listdir(PACKAGE)):
        if name.endswith(".py"):
            with open(os.path.join(PACKAGE, name), "rb") as f:
                yield f"tern/{name}", f.read()
    if lib:
        with open(lib, "rb") as f:
            yield "tern/libtern.so.0", f.read()


def _metadata():
    return (f"Metadata-Version: 2.1\nName: {NAME}\nVersion: {VERSION}\n"
            "Summary: tern's collectives from Python and the torch.distributed backend \"tern\"\n"
            "Requires-Python: >=3.9\n").encode()


def _write_dist_info(directory):
    info = os.path.join(directory, f"{NAME}-{VERSION}.dist-info")
    os.makedirs(info, exist_ok=True)
    with open(os.path.join(info, "METADATA"), "wb") as f:
        f.write(_metadata())
    return os.path.basename(info)


def get_requires_for_build_wheel(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    return _write_dist_info(metadata_directory)


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    lib = _library()
    tag = _tag(lib is not None)
    wheel_name = f"{NAME}-{VERSION}-{tag}.whl"
    info = f"{NAME}-{VERSION}.dist-info"
    wheel_meta = (f"Wheel-Version: 1.0\nGenerator: tern_wheel\nRoot-Is-Purelib: "
                  f"{'false' if lib else 'true'}\nTag: {tag}\n").encode()
    record = []
    with zipfile.ZipFile(os.path.join(wheel_directory, wheel_name), "w",
                         zipfile.ZIP_DEFLATED) as z:
        entries = list(_files(lib)) + [(f"{info}/METADATA", _metadata()),
                                       (f"{info}/WHEEL", wheel_meta)]
        for name, data in entries:
            z.writestr(name, data)
            record.append(_record_line(name, data))
        record.append(f"{info}/RECORD,,")
        z.writestr(f"{info}/RECORD", "\n".join(record) + "\n")
    print(f"tern_wheel: {wheel_name}" + (f" with {lib}" if lib else ", libtern not bundled"),
          file=sys.stderr)
    return wheel_name
