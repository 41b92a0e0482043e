"""The benchmarks measure what the notebooks run: their configurations are the notebooks' own."""
import ast
import importlib.util
import math
import sys

import nbformat
import torch

from autograder.paths import ROOT, SOURCE, notebook_path


def _bench(name: str):
    spec = importlib.util.spec_from_file_location(f"bench_{name}", ROOT / "bench" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # a dataclass's string annotations are resolved through its module
    spec.loader.exec_module(module)
    return module


def _cell(assignment: str, grade_id: str) -> ast.Module:
    notebook = nbformat.read(notebook_path(SOURCE, assignment), as_version=4)
    (cell,) = [c for c in notebook.cells if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id]
    return ast.parse(cell.source)


def _literal(node: ast.expr):
    """A literal's value; anything else (a name, an expression) as its source text."""
    try:
        return ast.literal_eval(node)
    except ValueError:
        return ast.unparse(node)


def _first_values(tree: ast.Module) -> dict:
    """Names assigned at the top level of a cell -> their values (see _literal); `dict(...)` calls as dicts."""
    values = {}
    for node in tree.body:
        if not isinstance(node, ast.Assign):
            continue
        target, value = node.targets[0], node.value
        if isinstance(value, ast.Call) and getattr(value.func, "id", None) == "dict":
            values[target.id] = {k.arg: _literal(k.value) for k in value.keywords if k.arg}
        elif isinstance(target, ast.Tuple):
            for name, item in zip(target.elts, value.elts):
                values[name.id] = _literal(item)
        elif isinstance(target, ast.Name):
            values[target.id] = _literal(value)
    return values


def _keyword(tree: ast.Module, function: str, name: str):
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == function:
            return next(_literal(k.value) for k in node.keywords if k.arg == name)
    raise LookupError(function)


def _device_branches(tree: ast.Module) -> dict[str, dict]:
    """The top-level `if device.type == "cuda": ... else: ...` of a cell: {"cuda": its values, "cpu": the else's}."""
    (branch,) = [node for node in tree.body if isinstance(node, ast.If) and "cuda" in ast.unparse(node.test)]
    return {"cuda": _first_values(ast.Module(body=branch.body, type_ignores=[])),
            "cpu": _first_values(ast.Module(body=branch.orelse, type_ignores=[]))}


def test_shakespeare_bench_trains_the_notebooks_configuration_for_each_device():
    """The notebook's training cell trains with the student's train_model, in the configurations bench/shakespeare.py
    keeps (model, batch, rate, weight decay) and with the schedule bench/training_loop.py trains the CPU run with."""
    bench, loop = _bench("shakespeare"), _bench("training_loop")
    train = _cell("07_shakespeare", "train_run")
    branches = _device_branches(train)
    assert branches["cpu"]["STEPS"] == bench.CPU_STEPS, "a CPU trains for the steps bench/README.md measures"
    for kind, values in branches.items():
        settings = bench.SETTINGS[kind]
        config = {name: values.get(value, value) if isinstance(value, str) else value  # DROPOUT -> its value
                  for name, value in values["CONFIG"].items()}
        assert config == {**settings["config"], "max_len": "SEQ_LEN"}, kind
        assert (values["BATCH"], values["LR"], values["WEIGHT_DECAY"]) == \
            (settings["batch"], settings["lr"], settings["weight_decay"]), kind
    for keyword, name in (("batch_size", "BATCH"), ("max_lr", "LR"), ("weight_decay", "WEIGHT_DECAY"),
                          ("warmup_steps", "WARMUP"), ("max_grad_norm", "CLIP"), ("eval_windows", "EVAL_WINDOWS")):
        assert _keyword(train, "train_model", keyword) == name, "the notebook trains with the values it states"
    first = _first_values(train)
    cpu = branches["cpu"]
    assert loop.TRAINING == dict(batch_size=cpu["BATCH"], max_lr=cpu["LR"], warmup_steps=first["WARMUP"],
                                 weight_decay=cpu["WEIGHT_DECAY"], max_grad_norm=first["CLIP"], eval_every=100,
                                 eval_windows=first["EVAL_WINDOWS"]), "bench/training_loop.py trains as the notebook"
    assert (bench.CONFIG, bench.BATCH, bench.LR) == (bench.SETTINGS["cpu"]["config"], 16, 3e-3), \
        "the CPU configuration is the course's original one, measured in bench/README.md"
    assert _first_values(_cell("07_shakespeare", "baselines_run"))["SEQ_LEN"] == bench.SEQ_LEN


def test_reversal_bench_trains_the_notebooks_configuration_for_each_device():
    bench = _bench("reversal")
    train = _cell("06_reversal", "train_run")
    values = _first_values(train)
    assert values["CONFIG"] == {**bench.CONFIG, "vocab_size": "VOCAB", "max_len": "2 * HALF"}
    assert (values["VOCAB"], values["HALF"]) == (bench.CONFIG["vocab_size"], bench.HALF)
    for kind, branch in _device_branches(train).items():
        assert (branch["BATCH"], branch["LR"]) == (bench.SETTINGS[kind]["batch"], bench.SETTINGS[kind]["lr"]), kind
    assert bench.SETTINGS["cpu"] == dict(batch=64, lr=5e-3), "the CPU settings are the ones measured in bench/README.md"
    for cell in (train, _cell("06_reversal", "leak_run")):
        assert (_keyword(cell, "train_reversal", "batch_size"), _keyword(cell, "train_reversal", "lr")) == ("BATCH", "LR"), \
            "both runs train with the values the notebook states"
    top = [ast.unparse(node) for node in train.body]
    assert top.index("torch.set_num_threads(1)") < next(i for i, s in enumerate(top) if "train_reversal(" in s), \
        "the training cell trains on one thread, as bench/README.md's issue-49 rows measure it"
    assert "set_num_threads" not in ast.unparse(_cell("06_reversal", "leak_run")), "one thread for the rest of 06"


def test_shakespeare_bench_reports_best_and_final_at_each_checkpoint(monkeypatch, capsys):
    """The bench end to end in seconds: a tiny configuration on random windows instead of the corpus."""
    import sys

    import torch

    bench = _bench("shakespeare")
    draw = torch.Generator().manual_seed(0)
    windows = torch.randint(16, (64, bench.SEQ_LEN), generator=draw)
    monkeypatch.setattr(bench, "data", lambda: (windows[:48], windows[48:], 16))
    monkeypatch.setitem(bench.SETTINGS, "cpu", dict(config=dict(d_model=8, n_heads=2, d_ff=16, n_layers=1, dropout=0.0),
                                                     batch=2, lr=1e-2, weight_decay=0.0))
    monkeypatch.setattr(sys, "argv", ["shakespeare.py", "--threads", "1", "--minutes", "0.01", "0.02"])
    bench.main()
    out = capsys.readouterr().out
    assert "0.01 min: step" in out and "0.02 min: step" in out and "best weights so far" in out
    header, row = [line for line in out.splitlines() if line.startswith("| ")]
    assert "best & final, at 0.01 / 0.02 min" in header
    assert row.count(" & ") == 2 and "| cpu |" in row
    monkeypatch.setattr(bench, "CPU_STEPS", 6)
    monkeypatch.setattr(sys, "argv", ["shakespeare.py", "--threads", "1"])  # the CPU's default: by steps, as 07
    bench.main()
    out = capsys.readouterr().out
    assert "2 steps: step 2 after" in out and "4 steps: step 4 after" in out and "6 steps: step 6 after" in out
    assert "\n6 steps, " in out, "training stops at the last checkpoint"
    header, row = [line for line in out.splitlines() if line.startswith("| ")]
    assert "best & final, at 2 / 4 / 6 steps" in header and "1 CPU threads, " in row
    assert row.count(" min)") == 3, "each checkpoint says how long its steps took"


def test_reversal_profile_accounts_for_every_phase_of_the_step(monkeypatch, capsys):
    """The profile of the course's reversal loop, end to end on a few steps: every phase in the table, the shares
    adding up to the whole step, and the loop's own functions left as they were."""
    import sys

    import torch

    from autograder.authoring.reference import reversal as ref

    bench = _bench("reversal_profile")
    batch_before = ref.reversal_batch
    monkeypatch.setattr(sys, "argv", ["reversal_profile.py", "--threads", "1", "--steps", "4"])
    threads = torch.get_num_threads()
    try:
        bench.main()
    finally:
        torch.set_num_threads(threads)
    out = capsys.readouterr().out
    rows = {line.split(" | ")[0].lstrip("| "): line for line in out.splitlines() if line.startswith("| ")
            and "---" not in line and not line.startswith("| phase")}
    assert list(rows) == bench.PHASES
    shares = [int(line.rstrip(" |").rsplit("| ", 1)[1].rstrip("%")) for line in rows.values()]
    assert 97 <= sum(shares) <= 103, shares  # each share is rounded to a whole percent
    for phase in ("batch (reversal_batch)", "forward", "backward", "Adam step"):
        assert float(rows[phase].split(" | ")[1]) > 0, f"{phase} took no time: the profiler did not see it"
    assert ref.reversal_batch is batch_before


def test_the_gpu_runbook_names_files_that_exist():
    """bench/on_device.sh runs tests and benches by path: a renamed file must not leave a GPU session's call broken."""
    import re

    script = (ROOT / "bench" / "on_device.sh").read_text()
    named = set(re.findall(r"\b((?:tests|bench)/[\w/]+\.py)\b", script))
    assert {"tests/test_mutants.py", "bench/reversal_profile.py", "bench/shakespeare.py"} <= named
    assert [path for path in sorted(named) if not (ROOT / path).is_file()] == []


def test_the_hub_capacity_students_answer_every_solution_cell():
    """bench/hub_capacity.py's students type the source's solutions into the notebook they fetch (their check cells
    then pass): every solution cell of each release notebook gets one, and no stub is left."""
    bench = _bench("hub_capacity")
    for release in sorted((ROOT / "release").glob("*/*.ipynb")):
        notebook = nbformat.read(release, as_version=4)
        bench.answer(notebook, bench.solution_sources(notebook_path(SOURCE, release.parent.name)))
        solution_cells = [c for c in notebook.cells if c.metadata.get("nbgrader", {}).get("solution")]
        assert solution_cells, release
        for cell in solution_cells:
            assert "NotImplementedError" not in cell.source and "YOUR CODE HERE" not in cell.source, release
            if cell.cell_type == "code":
                compile(cell.source, str(release), "exec")


def test_the_demo_devices_bench_names_every_difference_between_the_two_gradings(tmp_path):
    """bench/demo_devices.py (issue 53) says the GPU's grading agrees with the CPU's only when every score, reason,
    cell's points and error agree, and reads the device each notebook's set-up cell printed."""
    bench = _bench("demo_devices")
    rows = {("ada", "01"): {"score": "9", "max_score": "9", "late_penalty": "0", "written_answers_not_graded": "0",
                            "reason": "", "autograde_seconds": "3.0"}}
    cells = {("ada", "01", "check_pe"): "2"}
    errors = {("ada", "01", "check_pe"): "CheckFailed: positional_encoding: shape"}

    def run(name, **changes):
        row = {**rows[("ada", "01")], **changes.pop("row", {})}
        return bench.Run(name, 1.0, {("ada", "01"): row}, {**cells, **changes.pop("cells", {})},
                         {**errors, **changes.pop("errors", {})}, {("ada", "01"): changes.pop("device", "GPU (H)")})

    gpu = run("cuda")
    assert bench.differences(gpu, run("cpu", row={"autograde_seconds": "9.9"}, device="CPU")) == []
    assert bench.differences(gpu, run("cpu", row={"reason": "timed out"})) == [
        "ada/01: reason '' on cuda, 'timed out' on cpu"]
    assert bench.differences(gpu, run("cpu", cells={("ada", "01", "check_pe"): "0"})) == [
        "ada/01/check_pe: points '2' on cuda, '0' on cpu"]
    assert len(bench.differences(gpu, run("cpu", errors={("ada", "01", "check_pe"): "other"}))) == 1
    assert bench.differences(gpu, bench.Run("cpu", 1.0, {})) != []
    assert bench.on_the_gpu(gpu) == [] and bench.on_the_gpu(run("cpu", device="CPU")) == ["ada/01: CPU"]
    assert "| ada | 01 | 9 / 9 | 9 / 9 |" in bench.side_by_side(gpu, run("cpu"))

    from course.notebook_setup import device_report

    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(outputs=[nbformat.v4.new_output(
        "stream", name="stdout", text=f"Running on this machine with torch 2; device: {device_report(torch.device('cpu'))}.\n")])])
    (tmp_path / "ada" / "01").mkdir(parents=True)
    nbformat.write(notebook, tmp_path / "ada" / "01" / "01.ipynb")
    assert bench.read_notebooks(tmp_path) == ({}, {("ada", "01"): "CPU"})


def test_the_device_wheels_leave_the_class_hub_out():
    """The device tool carries at most 64 MiB with the working tree: with JupyterHub's packages the wheels were
    59.5 MiB, and with the 4.5 MiB tree the call could not start (2026-11-27). The hub never runs there."""
    from importlib.metadata import distribution

    wheels = _bench("device_wheels")
    hub_pins = {wheels.normalise(pin.split("==")[0]) for pin in wheels.pins(ROOT / "requirements.txt")
                if pin.lower().startswith("jupyterhub")}
    assert hub_pins and hub_pins <= wheels.LEFT_OUT
    for name in wheels.HUB_ONLY:  # every name is a package the course's environment really holds
        assert distribution(name).metadata["Name"], name


def test_the_thread_bench_trains_the_notebooks_cpu_configurations():
    """bench/threads.py times 06's and 07's training steps at the configurations the two other benches keep equal to
    the notebooks' CPU cells (the tests above), and a run of a few steps reports a rate."""
    bench, reversal, shakespeare = _bench("threads"), _bench("reversal"), _bench("shakespeare")
    assert bench.SETTINGS["06"]["config"] == {**reversal.CONFIG, "max_len": 2 * reversal.HALF}
    assert bench.SETTINGS["06"]["batch"] == reversal.SETTINGS["cpu"]["batch"] == 64
    assert bench.SETTINGS["07"]["config"] == {**shakespeare.SETTINGS["cpu"]["config"], "vocab_size": 30_607,
                                              "max_len": shakespeare.SEQ_LEN}
    assert bench.SETTINGS["07"]["batch"] == shakespeare.SETTINGS["cpu"]["batch"]
    threads = torch.get_num_threads()
    try:
        assert bench.steps_per_second("06", 1, 2) > 0
    finally:
        torch.set_num_threads(threads)


def test_the_overfitting_bench_runs_the_notebooks_experiment():
    """bench/overfitting.py runs 07's overfitting_experiment cell as it stands: its windows, steps, two runs, model and
    training keywords."""
    bench = _bench("overfitting")
    cell = _cell("07_shakespeare", "overfitting_experiment")
    values = _first_values(cell)
    assert (values["EXPERIMENT_WINDOWS"], values["EXPERIMENT_STEPS"]) == (bench.WINDOWS, bench.STEPS)
    assert [(0.0, 0.0), (values["EXPERIMENT_DROPOUT"], values["EXPERIMENT_WEIGHT_DECAY"])] == bench.RUNS
    for name, value in bench.MODEL.items():
        assert _keyword(cell, "DecoderOnlyTransformer", name) == value, name
    for name, value in bench.TRAINING.items():
        assert _keyword(cell, "train_model", name) == value, name
    assert _keyword(cell, "train_model", "weight_decay") == "weight_decay"


def _prose(assignment: str, grade_id: str) -> str:
    notebook = nbformat.read(notebook_path(SOURCE, assignment), as_version=4)
    (cell,) = [c for c in notebook.cells if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id]
    return " ".join(cell.source.split())


def _markdown_tables(section: str) -> list[list[dict]]:
    """The tables of a piece of markdown, in order: each a list of rows {column: cell}, bold marks taken out."""
    tables, lines = [], section.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("| ---"):
            header = [c.strip() for c in lines[i - 1].strip("|").split("|")]
            rows = []
            for row in lines[i + 1:]:
                if not row.startswith("|"):
                    break
                rows.append(dict(zip(header, (c.strip().replace("**", "") for c in row.strip("|").split("|")))))
            tables.append(rows)
    return tables


def _issue_49_tables() -> list[list[dict]]:
    """bench/README.md's issue-49 section: its tables, each a list of rows {column: cell}, bold marks taken out."""
    text = (ROOT / "bench" / "README.md").read_text()
    section = text[text.index("### The notebooks' clocks on one thread and on a shared machine (issue 49"):]
    section = section[:section.index("\n## ")].split("\n### The student's training loop")[0]
    return _markdown_tables(section)


def _training_loop_tables() -> list[list[dict]]:
    """The tables of bench/README.md's section "The student's training loop" (issue 60), each a list of rows."""
    text = (ROOT / "bench" / "README.md").read_text().split("### The student's training loop", 1)[1].split("\n#")[0]
    return _markdown_tables(text)


def test_the_times_the_notebooks_promise_are_the_ones_bench_measured():
    """Every time 06 and 07 tell a student (and the scores beside them) is a figure of bench/README.md's issue-49
    tables, rounded as the prose rounds it: measured with bench/run_notebook.py, threads.py and overfitting.py on one
    thread and on a shared machine, never asserted as a timing here. The promises they replace are gone."""
    import re

    notebooks, threads, overfitting = _issue_49_tables()
    row = {(r["notebook"], r["threads"][0]): r for r in notebooks}
    number = lambda cell, unit: float(re.search(rf"([\d.]+) {unit}", cell).group(1))  # noqa: E731

    text = _prose("06_reversal", "train_text")
    alone, shared = (next(r for r in notebooks if (r["notebook"], r["threads"]) == ("06", t)) for t in ("1", "2 (default)"))
    own = [r for r in notebooks if r["notebook"] == "06" and r["threads"].startswith("1, set by its training cell")]
    assert sorted(r["threads"].split("(")[1] for r in own) == ["avx512)", "default)"], "06 as it is, on two CPUs' kernels"
    trains, leaks = ([number(r["training cell"].split(", ")[i], "s") for r in own] for i in (0, 1))
    loads = [float(x) for r in own for x in re.findall(r"[\d.]+", r["load"])]
    assert (f"on a 2-core machine with {math.floor(min(loads))} to {math.ceil(max(loads))} programs wanting its two "
            f"cores, it took {round(min(trains))} to {round(max(trains))} seconds in our runs") in text
    assert (f"at about the load above, PyTorch's default two threads took {round(number(shared['training cell'], 's'))} "
            f"seconds for this cell where one thread took {round(number(alone['training cell'], 's'))}") in text
    busy = next(r for r in threads if r["notebook"] == "06" and r["load"] == "8.2 to 10.4")
    one, two = (float(busy[k].split()[0]) for k in ("1 thread", "2 threads"))
    assert f"with 8 to 10 programs wanting its two cores, they made under 2 steps a second where one thread made " \
           f"{round(one)}: over ten minutes for the 1000 steps instead of {round(1000 / one)} seconds" in text
    assert two < 2 and 1000 / two > 600
    readme = " ".join((ROOT / "bench" / "README.md").read_text().split())
    idle = re.search(r"took ([\d.]+) s on one thread and ([\d.]+) s on two, so one thread costs 06 nothing", readme)
    assert f"one thread trained it in {idle[1]} seconds and two in {idle[2]}" in text
    assert float(idle[1]) < float(idle[2]), "one thread costs 06 nothing on an idle machine"
    assert "ten seconds on a laptop" not in text
    assert "`torch.set_num_threads(1)` in the cell below gives PyTorch one thread for the rest of this notebook" in text
    rates = re.search(r"Our runs above showed (\d+) to (\d+) it/s", text)
    assert rates and int(rates[1]) <= 1000 / max(trains) and 1000 / min(trains) <= int(rates[2]), \
        "the bars' rates agree with the cell's times"
    assert (f"and about as long: {round(min(leaks))} to {round(max(leaks))} seconds in our runs on the busy machine "
            "above") in _prose("06_reversal", "leak_text")

    intro, text = _prose("07_shakespeare", "intro"), _prose("07_shakespeare", "train_text")
    alone, shared = row["07", "1"], row["07", "2"]
    assert "about 10 minutes with two cores to itself, and over an hour on a busy shared machine" in intro
    trained = [float(re.search(r"training ([\d.]+) min", r["training cell"]).group(1)) for r in (alone, shared)]
    assert trained[1] > 60 and "from about ten minutes to an hour" not in intro
    loop, after, _ = _training_loop_tables()  # the runs with the student's own loop (issue 60)
    loop, *other_kernels = loop
    score = float(loop["validation loss, all windows"])
    assert other_kernels and all(f"{float(row['validation loss, all windows']):.2f}" == f"{score:.2f}"
                                 for row in other_kernels), "07's score holds on every instruction set measured"
    assert (f"scored {score:.2f} nats per token on all the validation windows (perplexity about "
            f"{round(math.exp(score))}, against the bigram's 77)") in text
    assert (f"It took {round(float(loop['training'].split()[0]))} minutes on one thread of a 2-core machine at a load "
            f"of {loop['load']}") in text
    assert "took 37 minutes on one thread" not in text and "estimates had said" not in text
    one, two = after
    seconds = lambda row, column: round(float(row[column].split()[0]))  # noqa: E731
    assert (f"On one thread at a load of {one['load']}, scoring all 1,463 validation windows (the chart's cell) took "
            f"{seconds(one, 'final score, 1,463 windows')} seconds, the four samples {seconds(one, 'four samples')} and "
            f"the 400 greedy tokens {seconds(one, 'greedy, 400 tokens')}; on PyTorch's default two threads at a load of "
            f"{two['load']}, {seconds(two, 'final score, 1,463 windows')}, {seconds(two, 'four samples')} and "
            f"{seconds(two, 'greedy, 400 tokens')} seconds") in text

    text = _prose("07_shakespeare", "overfitting_experiment_text")
    run, *others = _training_loop_tables()[2]
    figures = lambda row: [v for k, v in row.items() if k.startswith(("no regularisation", "dropout"))]  # noqa: E731
    assert all(figures(other) == figures(run) for other in others), "the figures hold on every instruction set"
    plain, regularised = (run[k].split(", ") for k in ("no regularisation: best, last validation, last training loss",
                                                       "dropout 0.3, weight decay 0.1: the same"))
    best = lambda cell: cell.split(" at step ")  # noqa: E731
    assert (f"validation was best at step {best(plain[0])[1]} ({best(plain[0])[0]}) and climbed to {plain[1]} by step "
            f"150, while the training loss fell to {plain[2]}") in text
    assert (f"the best came later, at step {best(regularised[0])[1]} ({best(regularised[0])[0]}), and validation ended "
            f"at the same {regularised[1]}, with the training loss still at {regularised[2]}") in text
    assert plain[1] == regularised[1], "'the same' is what the table says"
    low, high = (round(float(x)) for x in run["load"].removeprefix("load ").split(" to "))
    assert (f"{round(float(run['the whole experiment'].split()[0]))} in our run on one thread of a 2-core machine "
            f"shared with other work (load {low} to {high})") in text
    assert "a few minutes" not in text and "prints an estimate" not in text


def test_the_slow_solutions_bench_times_the_reference_and_every_correct_variant(monkeypatch, capsys):
    """bench/slow_solutions.py (issue 51): a row for the reference and for each correct variant of the listing, both
    passing; the slow generates are among those it times; a hand-in it grades carries the variant as its generate."""
    from tests.mutants import positional_encoding, transformer

    bench = _bench("slow_solutions")
    names = [name for exercise, name, _ in bench.implementations("transformer", "generate")]
    assert names[0] == "(reference)"
    assert names[1:] == [impl.__name__ for exercise, impl in transformer.VARIANTS if exercise == "generate"]
    assert {"generate_row_by_row_variant", "generate_top_k_per_row_variant"} <= set(names)

    monkeypatch.setattr(sys, "argv", ["slow_solutions.py", "--module", "positional_encoding", "--exercise",
                                      "offset_rotation", "--repeat", "1"])
    threads = torch.get_num_threads()
    try:
        bench.main()
    finally:
        torch.set_num_threads(threads)
    rows = [line.split(" | ") for line in capsys.readouterr().out.splitlines() if line.startswith("| positional")]
    assert [row[1] for row in rows] == ["(reference)"] + [impl.__name__ for exercise, impl in positional_encoding.VARIANTS
                                                         if exercise == "offset_rotation"]
    assert all(row[-1] == "yes |" for row in rows), rows

    namespace = {"torch": torch}
    exec(bench.generate_cell("generate_row_by_row_variant"), namespace)
    model = torch.nn.Module()
    model.embedding = torch.nn.Module()
    model.embedding.max_len = 3
    model.forward = lambda tokens: torch.nn.functional.one_hot((tokens + 1) % 5, 5).double()
    assert namespace["generate"](model, torch.tensor([[0], [2]]), 3, temperature=0).tolist() == [[0, 1, 2, 3], [2, 3, 4, 0]]


def _section_tables(heading: str) -> list[list[dict]]:
    """The tables of bench/README.md's section that starts with `heading`: each a list of rows {column: cell}, bold
    marks taken out."""
    text = (ROOT / "bench" / "README.md").read_text()
    section = text[text.index(heading):]
    section = section[:section.index("\n## ", 1)]
    return _markdown_tables(section)


def test_the_kv_cache_bench_times_the_notebooks_cell_and_the_notebook_quotes_its_figures(monkeypatch, capsys):
    """bench/kv_cache.py (05's key-value cache) times what the notebook's timing cell times: the model, prompt and
    lengths of course.plots.transformer, which the cell's text states; on a tiny run it prints a row per length and
    thread count, the two generators writing the same tokens. Every figure the text quotes is one of bench/README.md's
    tables, rounded as the text rounds it."""
    import math
    import re

    from course.plots import transformer as plots

    bench = _bench("kv_cache")
    assert (bench.CACHE_MODEL, bench.CACHE_PROMPT, bench.CACHE_LENGTHS) == \
        (plots.CACHE_MODEL, plots.CACHE_PROMPT, plots.CACHE_LENGTHS)
    assert ast.unparse(_cell("05_transformer", "cache_speed")) == \
        "plots.show_cache_speed(DecoderOnlyTransformer, generate, generate_cached)"
    text = _prose("05_transformer", "cache_speed_text")
    model = plots.CACHE_MODEL
    assert (f"({model['n_layers']} layers, `d_model` {model['d_model']}, {model['n_heads']} heads, `max_len` "
            f"{model['max_len']})") in text
    lengths = ", ".join(map(str, plots.CACHE_LENGTHS[:-1])) + f" and {plots.CACHE_LENGTHS[-1]}"
    graded = ", ".join(map(str, plots.CACHE_LENGTHS_GRADED[:-1])) + f" and {plots.CACHE_LENGTHS_GRADED[-1]}"
    assert f"writes {lengths} tokens after a prompt of {plots.CACHE_PROMPT}" in text and plots.CACHE_REPEATS == 3
    assert f"writes {graded} tokens, once each" in text and plots.CACHE_REPEATS_GRADED == 1

    runs, cells = _section_tables("## A key-value cache in generation (notebook 05")
    one = [float(r["speed-up"]) for r in runs if r["threads"] == "1" and r["new tokens"] == "256"]
    one += [float(r["speed-up at 32 / 64 / 128 / 256 tokens"].split(" / ")[-1]) for r in cells]
    seconds = [float(r["the cell"].removesuffix(" s")) for r in cells]
    two = [float(r["generate s (median; runs)"].split()[0]) for r in runs if r["threads"] == "2" and
           r["new tokens"] == "256"]
    alone = [float(r["generate s (median; runs)"].split()[0]) for r in runs if r["threads"] == "1" and
             r["new tokens"] == "256" and r["kernels"] == "avx512"]
    assert f"the cell took {round(min(seconds))} to {round(max(seconds))} seconds" in text
    assert (f"`generate_cached` was {math.floor(min(one))} to {math.ceil(max(one))} times as fast as `generate` "
            f"({min(one):.1f} to {max(one):.1f} in our runs)") in text
    assert f"`generate` took {round(min(two))} to {round(max(two))} seconds for 256 tokens instead of under one" \
        in text and max(alone) < 1

    monkeypatch.setattr(sys, "argv", ["kv_cache.py", "--threads", "1", "--repeats", "1", "--lengths", "2", "5"])
    threads = torch.get_num_threads()
    try:
        bench.main()
    finally:
        torch.set_num_threads(threads)
    rows = [line.split(" | ") for line in capsys.readouterr().out.splitlines() if re.match(r"\| \d+ \| 1 \|", line)]
    assert [row[0] for row in rows] == ["| 2", "| 5"] and all(row[-1] == "yes |" for row in rows), rows
