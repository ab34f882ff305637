# One command each (STYLE 11). `make run` and `make test` set everything up on a fresh machine.
PY      := .venv/bin/python
STAMP   := .venv/.installed-$(shell cksum requirements.txt | cut -d' ' -f1)

.PHONY: run test lint bench system-deps clean

$(STAMP): requirements.txt
	test -x $(PY) || python3 -m venv .venv
	$(PY) -m pip install -q --disable-pip-version-check -r requirements.txt
	rm -f .venv/.installed-* && touch $@

system-deps:
	bash scripts/system-deps.sh

run: $(STAMP)
	$(PY) app.py serve

test: $(STAMP) system-deps
	$(PY) -m pytest -q -p no:cacheprovider

lint: $(STAMP)
	$(PY) -m ruff check .
	$(PY) -m mypy

bench: $(STAMP)
	for b in bench/*.py; do echo "== $$b"; $(PY) $$b || exit 1; done

clean:
	rm -rf .venv .pytest_cache
