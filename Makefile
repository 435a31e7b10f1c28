# doit: two commands. `make demo` (the embedded micro study) and `make test` (every test).
# Both create .venv on first use; nothing needs to be installed by hand but Python 3.11.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
export TORCH_EXTENSIONS_DIR := $(CURDIR)/$(VENV)/torch_extensions
export HF_HUB_OFFLINE := 1
export HF_DATASETS_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false
DEMO_DIR ?= data/generated/micro
SEEDS ?= 0
LADDER_DIR ?= runs/ladder
LADDER_STUDY ?= $(LADDER_DIR)/study
DEMO_GRID ?= recipes/grids/demo.yaml
DEMO_STUDY ?= runs/study/demo

.PHONY: demo test test-fast lint ladder clean check-cxx lock

$(VENV)/.installed: pyproject.toml constraints-cpu.txt
	@command -v $(PYTHON) >/dev/null || { echo "error: $(PYTHON) not found; install Python 3.11" >&2; exit 1; }
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	# torch first, pinned: here it installs from a local CPU wheel; a newer one pulls a multi-GB CUDA build.
	$(PY) -m pip install -q torch==2.13.0
	# the rest at the lock's versions: another install pretrains other micro bases (constraints-cpu.txt)
	$(PY) -m pip install -q -c constraints-cpu.txt -e ".[dev,train,eval,slurm,mixing]"
	touch $@

# Move the lock (after a dependency change): the venv upgraded to what the registry resolves
# now, without the lock, then the lock rewritten from it (its header kept). Pretrained micro
# bases built before it are then another install's (studies/seed_noise_micro).
lock: $(VENV)/.installed
	$(PY) -m pip install -q --upgrade --upgrade-strategy eager torch==2.13.0 -e ".[dev,train,eval,slurm,mixing]"
	{ sed -n '/^#/p' constraints-cpu.txt; $(PY) -m pip freeze --exclude-editable | grep -v '^torch=='; } > constraints-cpu.txt.tmp
	mv constraints-cpu.txt.tmp constraints-cpu.txt

check-cxx:
	@command -v c++ >/dev/null 2>&1 || command -v g++ >/dev/null 2>&1 || { \
	  echo "error: no C++ compiler (c++/g++) found. DeepSpeed compiles its CPU ops at run time;" >&2; \
	  echo "       install one (Debian/Ubuntu: apt-get install g++) and rerun." >&2; exit 1; }

# The demo: the whole study at micro scale (recipes/demo.py): the micro corpus, two micro bases,
# the grid recipes/grids/demo.yaml, the analysis, a curriculum trained and compared, the report
# and a summary; each step timed beside its budget. A rerun reuses every finished piece.
demo: $(VENV)/.installed check-cxx
	$(PY) recipes/demo.py --data $(DEMO_DIR) --grid $(DEMO_GRID) --study $(DEMO_STUDY)

# DeepSpeed compiles its CPU shared-memory collectives op on first use (DeepSpeed's CPU ranks
# use it): about 50 s and both cores on this machine. Built here once per venv, like an
# install step, rather than inside whichever test first starts two DeepSpeed ranks.
DS_SHM_OP := $(TORCH_EXTENSIONS_DIR)/deepspeed_shm_comm/deepspeed_shm_comm.so
$(DS_SHM_OP): $(VENV)/.installed | check-cxx
	$(PY) -c "from deepspeed.comm.torch import build_shm_op; build_shm_op()"

# The tests on two xdist workers, one torch thread each; the tests that start processes of their
# own (worker pools, two ranks, the demo) share one worker group (tests/conftest.py, POOLS).
test: $(VENV)/.installed check-cxx $(DS_SHM_OP)
	$(PY) -m pytest -q -n 2 --dist loadgroup --durations=15

test-fast: $(VENV)/.installed check-cxx $(DS_SHM_OP)
	$(PY) -m pytest -q -n 2 --dist loadgroup -m "not slow" --durations=10

# Pretrain the micro base ladder (vanilla/resformer/svformer x sizes xs, s, l: the grid
# recipes/grids/ladder.yaml, seeds SEEDS, bases in LADDER_DIR/<arch>_<size>/seed<k>) and compare them.
comma := ,
empty :=
space := $(empty) $(empty)
ladder: $(VENV)/.installed check-cxx
	test -f $(DEMO_DIR)/pretrain/train.txt || $(PY) -m doit.data micro --out $(DEMO_DIR) --held-out 100  # the demo's (recipes/demo.py)
	$(PY) -m doit.grid plan recipes/grids/ladder.yaml --out $(LADDER_STUDY) --replan \
	  --set doit_dir=$(DEMO_DIR) --set bases_dir=$(LADDER_DIR) \
	  --set "pretrain_seed=[$(subst $(space),$(comma),$(strip $(SEEDS)))]"
	$(PY) -m doit.grid run $(LADDER_STUDY) --max-parallel 2 --threads 1
	$(PY) -m doit.analysis ladder $(LADDER_DIR) --out $(LADDER_DIR)/analysis

lint: $(VENV)/.installed
	$(PY) -m ruff check doit recipes tests bench studies
	$(PY) -m ruff format --check doit recipes tests bench studies

clean:
	rm -rf $(VENV) .pytest_cache data/generated
