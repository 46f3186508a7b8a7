"""The benchmarks (see README.md), a package so scripts import each other as ``benchmarks.<group>.<module>``.

Each script puts the repo root on ``sys.path`` first, so it runs from the repo root as
``.venv/bin/python benchmarks/<group>/<script>.py`` (or ``python -m benchmarks.<group>.<script>``).
"""
