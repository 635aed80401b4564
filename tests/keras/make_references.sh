#!/usr/bin/env bash
# Remakes tests/keras/data with TensorFlow's converter and Keras (tensorflow-cpu from PyPI, in a
# venv under build/; a few minutes). The committed files are what the tests read.
set -euo pipefail
cd "$(dirname "$0")"
venv=../../build/keras-venv
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/pip" install -q tensorflow-cpu==2.21.0 numpy
"$venv/bin/python" make_references.py
