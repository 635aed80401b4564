#!/usr/bin/env python3
"""The folders import one way (docs/architecture.md): every quoted #include of a product file
resolves to a header of its own folder or of one the table lets it use, and never to one above.

  include/          nothing of the project
  common/           include/
  kernels/          (its own)
  backend/          include/, common/, kernels/
  host/<F>          host folders at or below F in graph < ops < passes < model < runtime < api, cli;
                    include/, common/; the schema headers generated at build time

A name that resolves to no file of the tree (a system or generated header) is left alone; one that
resolves only to files a folder may not use is listed, and the check fails."""
import os
import re
import sys

root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
os.chdir(root)
HOST_ORDER = ["graph", "ops", "passes", "model", "runtime", "api", "cli"]
GENERATED = {"circle_generated.h", "circle_traininfo_generated.h"}

headers = []  # every header of the tree, as a path
for top in ["include", "common", "kernels", "backend", "host"]:
    for d, _, files in os.walk(top):
        headers += [os.path.join(d, f) for f in files if f.endswith((".h", ".hpp"))]


def allowed(src, header):
    """May the product file src include header?"""
    s, h = src.split(os.sep), header.split(os.sep)
    if h[0] == "include":
        return True
    if s[0] == "include":
        return False
    if h[0] == "common":
        return s[0] in ("common", "backend", "host")
    if s[0] in ("common", "kernels"):
        return h[0] == s[0]
    if s[0] == "backend":
        return h[0] in ("backend", "kernels") and (h[0] != "backend" or h[1] == s[1] or h[1] == "common")
    if s[0] == "host" and h[0] == "host":
        level = lambda f: HOST_ORDER.index(f) if f in HOST_ORDER else len(HOST_ORDER)
        return level(h[1]) <= level(s[1]) or (s[1] == "cli" and h[1] == "api")
    return False


bad = []
for top in ["include", "common", "kernels", "backend", "host"]:
    for d, _, files in os.walk(top):
        for f in files:
            if not f.endswith((".h", ".cc", ".c", ".cl")):
                continue
            src = os.path.join(d, f)
            for name in re.findall(r'^\s*#\s*include\s+"([^"]+)"', open(src, errors="replace").read(), re.M):
                if name in GENERATED:
                    continue
                # Where it may resolve: beside the file, else any header whose path ends with it.
                beside = os.path.normpath(os.path.join(d, name))
                found = [beside] if os.path.exists(beside) else [h for h in headers if h.endswith(os.sep + name)]
                if found and not any(allowed(src, h) for h in found):
                    bad.append("%s includes \"%s\" (%s)" % (src, name, ", ".join(found)))
for line in bad:
    print("check_imports: " + line)
print("check_imports: %d include(s) against the folders' order" % len(bad))
sys.exit(1 if bad else 0)
