"""Runs one test module under unittest for CTest: exit 0 when its tests pass, 1 when one fails, and
77 (CTest's skip code here) when every test of it was skipped, after printing why."""

import sys
import unittest


def main() -> int:
    name = sys.argv[1]
    suite = unittest.defaultTestLoader.loadTestsFromName(name)
    result = unittest.TextTestRunner(verbosity=2).run(suite)
    if not result.wasSuccessful():
        return 1
    if result.testsRun and len(result.skipped) == result.testsRun:
        reasons = sorted({reason for _, reason in result.skipped})
        print(f"{name}: every test skipped: {'; '.join(reasons)}")
        return 77
    return 0


if __name__ == "__main__":
    sys.exit(main())
