# One command each (STYLE 11). `make run` and `make test` set everything up on a fresh machine.
PY      := .venv/bin/python
# cuda where nvidia-smi answers (CUDA torch + torchvision, scripts/torch-setup.sh), else cpu (the CPU torch)
ACCEL   := $(shell command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1 && echo cuda || echo cpu)
STAMP   := .venv/.installed-$(shell cat requirements.txt scripts/torch-setup.sh | cksum | cut -d' ' -f1)-$(ACCEL)

.PHONY: run test lint bench mutation system-deps torch-cuda clean

$(STAMP): requirements.txt scripts/torch-setup.sh
	test -x $(PY) || python3 -m venv .venv
	$(PY) -m pip install -q --disable-pip-version-check -r requirements.txt
	bash scripts/torch-setup.sh $(PY)
	rm -f .venv/.installed-* && touch $@

# the CUDA torch + torchvision even where nvidia-smi is not on PATH (a GPU workstation's odd driver setup)
torch-cuda: $(STAMP)
	bash scripts/torch-setup.sh $(PY) --cuda

system-deps:
	bash scripts/system-deps.sh

run: $(STAMP)
	$(PY) app.py serve

# two workers (the machine's two cores), a module's tests on one worker (its module fixtures built once), handed
# out longest first (tests/conftest.py LONGEST_FIRST; --no-loadscope-reorder keeps that order, where xdist's own
# put the modules with the most tests first and the long browser modules last); the 30 slowest steps are listed.
# The app's bytecode is written first: where PYTHONDONTWRITEBYTECODE is set, every app and CLI process the tests
# start (about 140) would compile the sources again (0.3 s of CPU each for the server's imports)
test: $(STAMP) system-deps
	$(PY) -m compileall -q app.py cli core db ui
	$(PY) -m pytest -q -p no:cacheprovider -n 2 --dist loadfile --no-loadscope-reorder --durations=30

# mutmut over the core modules, one module at a time with its fast unit tests (not part of `make test`; about
# an hour on two cores; docs/TESTING.md). ARGS="--only stats parsing" picks modules.
mutation: $(STAMP)
	$(PY) scripts/mutation.py $(ARGS)

lint: $(STAMP)
	$(PY) -m ruff check .
	$(PY) -m mypy

bench: $(STAMP)
	for b in bench/*.py; do echo "== $$b"; $(PY) $$b || exit 1; done

clean:
	rm -rf .venv .pytest_cache
