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

.PHONY: setup demo test release reference fixtures lab clean new-term colab-runtime hub

setup: $(STAMP)

# Chromium for the browser tests (tests/test_browser.py): set-up installs it with apt-get where it runs as
# root and apt-get exists, and checks again at every set-up. Never fatal: without it those tests skip and
# say why. Colour emoji too, so the checks' marks show in the screenshots; and nss_wrapper, which the class hub's
# Kubernetes images run first (tests/test_hub_deploy_files.py runs their entrypoint with it).
CHROMIUM := $(if $(and $(filter 0,$(shell id -u)),$(shell command -v apt-get)),/usr/bin/chromium)
APT_INSTALL := DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium fonts-noto-color-emoji libnss-wrapper

# bubblewrap, the box each graded notebook runs in (autograder/box/), and shadow's newuidmap and newgidmap (uidmap), which
# give an account's boxes user ids of their own: from the system's packages where set-up runs as root, like Chromium.
# Never fatal: without bubblewrap, grading refuses to start and says what to do (the demo grades its own hand-ins anyway).
BWRAP := $(if $(and $(filter 0,$(shell id -u)),$(shell command -v apt-get)),/usr/bin/bwrap)

# Node.js and npm for the class hub's proxy (configurable-http-proxy, deploy/proxy/package.json): from the system's packages,
# like Chromium, where it runs as root and has none yet. Never fatal: without them the hub's tests skip and say why.
NODE := $(if $(and $(filter 0,$(shell id -u)),$(shell command -v apt-get)),$(if $(shell command -v npm),,/usr/bin/npm))
HUB_PROXY := deploy/proxy/node_modules/.installed

$(STAMP): requirements.txt requirements-nodeps.txt $(CHROMIUM) $(NODE) $(BWRAP)
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements.txt
	$(PY) -m pip install --quiet --disable-pip-version-check --no-deps -r requirements-nodeps.txt
	$(PY) -c "import pathlib, site; pathlib.Path(site.getsitepackages()[0], 'transformers_course_root.pth').write_text('$(CURDIR)\n')"
	touch $@

/usr/bin/chromium:
	@echo "installing Chromium for the browser tests (apt-get)"
	@($(APT_INSTALL) || (apt-get update -qq && $(APT_INSTALL))) >/dev/null 2>&1 \
	  || echo "could not install Chromium: the browser tests will skip"

/usr/bin/bwrap:
	@echo "installing bubblewrap and uidmap for the box graded notebooks run in (apt-get)"
	@(DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends bubblewrap uidmap \
	  || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends bubblewrap uidmap)) \
	  >/dev/null 2>&1 || echo "could not install bubblewrap: grading will refuse to start until it is installed"

/usr/bin/npm:
	@echo "installing Node.js and npm for the class hub's proxy (apt-get)"
	@(DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends nodejs npm \
	  || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends nodejs npm)) \
	  >/dev/null 2>&1 || echo "could not install Node.js: make hub and the hub's tests need it"

# The proxy, at the version deploy/proxy/package-lock.json pins.
$(HUB_PROXY): deploy/proxy/package.json deploy/proxy/package-lock.json
	@if command -v npm >/dev/null; then npm ci --prefix deploy/proxy --no-audit --no-fund --loglevel=error && touch $@; \
	else echo "no npm: the class hub's proxy is not installed (make hub and its tests need it)"; fi

# JupyterLab's notice of a hand-in graded at submission (deploy/grade-notice/), built with JupyterLab's own builder
# against the installed JupyterLab; the class hub gives it to every student. Never fatal: without npm, no notice.
GRADE_NOTICE := deploy/grade-notice/labextension/package.json
$(GRADE_NOTICE): deploy/grade-notice/package.json deploy/grade-notice/package-lock.json deploy/grade-notice/index.js $(STAMP)
	@if command -v npm >/dev/null; then npm ci --prefix deploy/grade-notice --no-audit --no-fund --loglevel=error \
	  && cd deploy/grade-notice && node node_modules/@jupyterlab/builder/lib/build-labextension.js \
	  --core-path "$$($(CURDIR)/$(PY) -c 'import jupyterlab, os; print(os.path.join(os.path.dirname(jupyterlab.__file__), "staging"))')" . >/dev/null; \
	else echo "no npm: the class hub's students get no notice of a hand-in graded at submission"; fi

# A class hub on http://127.0.0.1:8000/ with demo accounts, until Ctrl-C (autograder/hub/; the instructor guide).
hub: $(STAMP) $(HUB_PROXY) $(GRADE_NOTICE)
	$(PY) -m autograder hub

demo: $(STAMP)
	$(PY) -m autograder demo

# A simulated fresh Colab runtime for tests/test_colab.py: set up here, because tests never download.
COLAB_STAMP := .venv-colab/.installed

colab-runtime: $(COLAB_STAMP)

$(COLAB_STAMP): $(STAMP) tests/colab_runtime.py
	$(PY) tests/colab_runtime.py

# One pytest-xdist worker per core this process may use, at most 4 (each one grades whole classes); each test file
# runs whole on one worker, the slowest first (tests/conftest.py).
TEST_WORKERS ?= $(shell $(PYTHON) -c "import os; print(max(1, min(4, len(os.sched_getaffinity(0)))))")
test: $(STAMP) $(COLAB_STAMP) $(HUB_PROXY) $(GRADE_NOTICE)
	$(PY) -m pytest tests -n $(TEST_WORKERS) --dist loadfile --durations=30

release: $(STAMP)
	$(PY) -m autograder release

reference: $(STAMP)
	$(PY) -m autograder reference

fixtures: $(STAMP)
	$(PY) -m autograder fixtures

# JupyterLab's file browser opens on release/, the student view. The server's root is the course directory,
# so nbgrader's formgrader (Nbgrader > Formgrader) can open source/, release/ and the submissions it links
# to. tests/test_browser.py starts JupyterLab with these options.
lab: $(STAMP)
	$(BIN)/jupyter lab --ServerApp.root_dir=. --ContentsManager.preferred_dir=release $(if $(filter 0,$(shell id -u)),--allow-root)

# What grading writes and can write again from the gradebook and the hand-ins: `make clean` removes only this.
# gradebook.db (manual grades, comments, due dates, students), submitted/ and downloaded/ are never deleted.
clean:
	rm -rf autograded feedback reports grading grades.csv

# Everything of one term, the grades included: `make new-term` moves it to archive/<date-time>/, deleting nothing
# (after `make demo`, before the first real class; at the end of a term); the course's folders in nbgrader's
# exchange (hand-ins, released assignments and feedback) too, into archive/<date-time>/exchange/, and last term's
# LMS files (rosters, uploads, the columns kept, what was pushed) into archive/<date-time>/lms/, the LTI tool's
# registration (lms/lti.toml and its key) staying.
TERM_FILES := gradebook.db extensions.json submitted downloaded autograded feedback reports grading grades.csv on-submit
new-term:
	@archive=archive/$$(date +%Y-%m-%d-%H%M%S); mkdir -p $$archive; \
	for part in $(TERM_FILES); do if [ -e $$part ]; then mv $$part $$archive/; fi; done; \
	$(PY) -m autograder.handins.exchange_archive $$archive && \
	$(PY) -m autograder.lms.term $$archive && \
	echo "moved the term's grading ($(TERM_FILES)) to $$archive; nothing was deleted"
