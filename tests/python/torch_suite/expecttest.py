"""A stand-in for the `expecttest` package, which torch's test helpers import and Debian 12 does
not ship: the two names torch.testing._internal.common_utils uses (ACCEPT, TestCase). The
distributed suite never compares against expected text, so assertExpectedInline compares plainly.
"""
import unittest

ACCEPT = False


class TestCase(unittest.TestCase):
    def assertExpectedInline(self, actual, expect, skip=0):
        self.assertEqual(actual, expect)
