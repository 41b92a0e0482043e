# Two commands do everything on a fresh machine with Python 3.11 and pip:
#   make demo   build the release and grade a demo class with real nbgrader
#   make test   the whole test suite
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PY := $(BIN)/python
# nbgrader runs `alembic` as a subprocess: the environment's bin/ must be on PATH.
export PATH := $(CURDIR)/$(BIN):$(PATH)
STAMP := $(VENV)/.installed

.PHONY: setup demo test release reference fixtures lab clean

setup: $(STAMP)

$(STAMP): requirements.txt requirements-nodeps.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements.txt
	$(PY) -m pip install --quiet --disable-pip-version-check --no-deps -r requirements-nodeps.txt
	$(PY) -c "import pathlib, site; pathlib.Path(site.getsitepackages()[0], 'transformers_course_root.pth').write_text('$(CURDIR)\n')"
	touch $@

demo: $(STAMP)
	$(PY) -m autograder demo

test: $(STAMP)
	$(PY) -m pytest tests --durations=15

release: $(STAMP)
	$(PY) -m autograder release

reference: $(STAMP)
	$(PY) -m autograder reference

fixtures: $(STAMP)
	$(PY) -m autograder fixtures

lab: $(STAMP)
	$(BIN)/jupyter lab --ServerApp.root_dir=release $(if $(filter 0,$(shell id -u)),--allow-root)

clean:
	rm -rf submitted autograded feedback reports grading gradebook.db grades.csv
