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


def undefined_by_member(archive):
    """The symbols each member of an archive uses from elsewhere, by nm."""
    out = subprocess.run(["nm", "-A", "-u", archive], check=True,
                         capture_output=True, text=True).stdout
    members = {}
    for line in out.splitlines():
        where, _, name = line.rpartition(" ")
        member = where.split(":")[1]
        members.setdefault(member, set()).add(name)
    return members


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

    def test_front_requests_go_one_way(self):
        """conn.c reads and sends, api.c and web.c decide: what decides
        calls nothing of conn.c, whose one way in for a later answer is
        conn_reply (src/README)."""
        self.library("libfront.a")
        uses = undefined_by_member(os.path.join(BUILD, "libfront.a"))
        for part in ("-api.o", "-web.o"):
            member = [m for m in uses if m.endswith(part)]
            self.assertEqual(len(member), 1, sorted(uses))
            back = sorted(n for n in uses[member[0]]
                          if n.startswith("conn_"))
            self.assertEqual(back, [], "%s calls into conn.c" % member[0])
        conn = [m for m in uses if m.endswith("-conn.o")]
        self.assertEqual(len(conn), 1, sorted(uses))
        self.assertIn("api_head", uses[conn[0]])
        self.assertIn("api_request", uses[conn[0]])
        later = sorted(n for m, names in uses.items() for n in names
                       if n.startswith("conn_") and not m.endswith("-main.o")
                       and not m.endswith("-listener.o"))
        self.assertEqual(sorted(set(later)), ["conn_reply"])

    def test_worker_maps_only_its_libraries(self):
        libs = needed(WORKER)
        self.assertTrue(any(n.startswith("libwebsockets") for n in libs),
                        libs)
        for front_only in ("libuv", "libjansson", "libsystemd"):
            self.assertFalse(any(n.startswith(front_only) for n in libs),
                             "%s in lodged-worker: %s" % (front_only, libs))


if __name__ == "__main__":
    unittest.main()
