#!/usr/bin/python3
"""The layers the build keeps apart: lodged (the front) links no worker
object and lodged-worker no front object, each program's own code is in its
convenience library beside it in the build directory (libworker.a,
libfront.a), and the template maps only the libraries its workers need."""

import os
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import lodgetest as lt  # noqa: E402

BUILD = os.path.dirname(os.path.abspath(lt.LODGED))
WORKER = os.path.join(BUILD, "lodged-worker")


def defined(path):
    """The global symbols path defines (text and data), by nm."""
    out = subprocess.run(["nm", "-g", "--defined-only", path], check=True,
                         capture_output=True, text=True).stdout
    names = set()
    for line in out.splitlines():
        f = line.split()
        if len(f) == 3 and f[1] in "TDBR":
            names.add(f[2])
    return names


def needed(path):
    """The DT_NEEDED entries of an executable, by readelf."""
    out = subprocess.run(["readelf", "-d", path], check=True,
                         capture_output=True, text=True).stdout
    return [line.split("[", 1)[1].rstrip("]")
            for line in out.splitlines() if "(NEEDED)" in line]


class TestLayers(unittest.TestCase):

    def library(self, name):
        path = os.path.join(BUILD, name)
        self.assertTrue(os.path.isfile(path), "%s not built beside %s"
                        % (name, lt.LODGED))
        names = defined(path)
        self.assertGreater(len(names), 20, "%s: too few symbols" % path)
        return names

    def test_front_links_no_worker_code(self):
        worker = self.library("libworker.a")
        self.assertIn("child_start", worker)
        self.assertIn("template_main", worker)
        leaked = sorted(worker & defined(lt.LODGED))
        self.assertEqual(leaked, [], "worker code linked into lodged")

    def test_worker_links_no_front_code(self):
        front = self.library("libfront.a")
        self.assertIn("registry_find", front)
        leaked = sorted(front & defined(WORKER))
        self.assertEqual(leaked, [], "front code linked into lodged-worker")

    def test_worker_maps_only_its_libraries(self):
        libs = needed(WORKER)
        self.assertTrue(any(n.startswith("libwebsockets") for n in libs),
                        libs)
        for front_only in ("libuv", "libjansson", "libsystemd"):
            self.assertFalse(any(n.startswith(front_only) for n in libs),
                             "%s in lodged-worker: %s" % (front_only, libs))


if __name__ == "__main__":
    unittest.main()
