# The two commands a user needs; each does its own set-up first.
.PHONY: setup demo test bench

setup:
	@bash scripts/setup.sh

demo: setup
	.venv/bin/verirl demo

test: setup
	@bash scripts/services.sh
	.venv/bin/python -m pytest -q -ra

bench: setup
	@for b in bench/*.py; do echo "== $$b"; .venv/bin/python $$b || exit 1; done
