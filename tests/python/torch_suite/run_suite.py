"""run_suite.py BACKEND WORLD_SIZE OUT.csv [NAME_PATTERN]: torch's own distributed test suite
(torch.testing._internal.distributed.distributed_test: DistributedTest._DistTestBase through
TestDistBackend, each test in WORLD_SIZE forked processes, init_method file://, as torch's
test/distributed/test_distributed_spawn.py runs it but for the fork) with BACKEND gloo or tern. For tern, "tern"
joins DistTestCases.backend_feature "plugin", "ddp" and "subgroup" before the suite is imported
(its skip decorators read them then); BACKEND tern+gpu adds it to "gpu" too. Writes one line per test, "name,outcome,skip reason" (passed,
failed, error, skipped), and prints the counts.
"""
import os
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)  # the expecttest stand-in

# "tern+gpu": tern in backend_feature "gpu" too, which on a machine without GPUs only lets the
# CPU paths of the tests gated by it run (the object collectives, ...)
BACKEND, EXTRA = (sys.argv[1].split("+") + [None])[:2]
WORLD_SIZE = sys.argv[2]
os.environ.update(BACKEND=BACKEND, WORLD_SIZE=WORLD_SIZE)
if "TEMP_DIR" not in os.environ:  # the suite's lock and barrier files; suite.sh gives one
    os.environ["TEMP_DIR"] = tempfile.mkdtemp(prefix="tern_suite_")

import torch  # noqa: E402
from torch.testing._internal.common_distributed import DistTestCases  # noqa: E402

if BACKEND == "tern":
    import tern  # noqa: F401,E402 - registers the backend, in every spawned rank too
    for feature in ("plugin", "ddp", "subgroup") + ((EXTRA,) if EXTRA else ()):
        DistTestCases.backend_feature[feature].add("tern")

from torch.testing._internal.distributed.distributed_test import (  # noqa: E402
    DistributedTest, TestDistBackend)


class TestDistBackendWithFork(TestDistBackend, DistributedTest._DistTestBase):
    def setUp(self):
        super().setUp()
        # forked, not spawned: a spawned rank imports torch again, seconds apiece on 2 shared
        # cores, for each of the suite's 279 tests
        self._start_processes(torch.multiprocessing.get_context("fork").Process)
        torch.backends.cudnn.flags(enabled=True, allow_tf32=False).__enter__()


class Record(unittest.TextTestResult):
    outcomes, reasons = {}, {}

    def addSuccess(self, test):
        super().addSuccess(test)
        self.outcomes[test._testMethodName] = "passed"

    def addFailure(self, test, err):
        super().addFailure(test, err)
        self.outcomes[test._testMethodName] = "failed"

    def addError(self, test, err):
        super().addError(test, err)
        self.outcomes[getattr(test, "_testMethodName", str(test))] = "error"

    def addSkip(self, test, reason):
        super().addSkip(test, reason)
        self.outcomes[test._testMethodName] = "skipped"
        self.reasons[test._testMethodName] = " ".join(str(reason).replace(",", ";").split())


def main():
    out = sys.argv[3]
    pattern = sys.argv[4] if len(sys.argv) > 4 else None
    loader = unittest.TestLoader()
    if pattern:
        loader.testNamePatterns = [pattern]
    suite = loader.loadTestsFromTestCase(TestDistBackendWithFork)
    unittest.TextTestRunner(resultclass=Record, verbosity=1).run(suite)
    with open(out, "w") as f:
        for name in sorted(Record.outcomes):
            f.write(f"{name},{Record.outcomes[name]},{Record.reasons.get(name, '')}\n")
    counts = {}
    for o in Record.outcomes.values():
        counts[o] = counts.get(o, 0) + 1
    print(f"{sys.argv[1]} WORLD_SIZE {WORLD_SIZE}: " +
          ", ".join(f"{counts.get(k, 0)} {k}" for k in ("passed", "failed", "error", "skipped")))


if __name__ == "__main__":
    main()
