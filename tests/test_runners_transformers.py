"""Local transformers runner on tiny offline builds of real architectures (tests/tiny_models.py), each with its
checkpoint's real chat template (tests/chat_templates/), run through the CLI into a real store."""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from tiny_models import BUILDERS, TEMPLATES, write_benchmark, write_qwen2vl, write_smolvlm

import app
from core import prompts
from core.runners.base import Dialog, ItemView, Reply, Request, Task, text_part
from core.runners.engine import RunSettings, to_prediction
from db.importers import import_items
from db.store import Store

ROOT = Path(__file__).resolve().parent.parent
# does the checkpoint's prompt keep each "Image i:" label next to its image?
SEPARATED = {"llava": True, "llava_next": True, "gemma3": False, "idefics3": False, "paligemma": True}
# does the rendered template itself start with BOS (then the tokenizer must not add a second)?
TEMPLATE_BOS = {"llava": False, "llava_next": False, "gemma3": True, "idefics3": True, "paligemma": False}


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    root = tmp_path_factory.mktemp("models")
    return {name: build(root / name) for name, build in BUILDERS.items()}


@pytest.fixture
def bench(tmp_path):
    jsonl = write_benchmark(tmp_path / "data", n_groups=2, per_group=2, n_images=3)
    db = tmp_path / "s.db"
    import_items(Store(db), jsonl, name="tiny")
    return db


def _run(db, model, *extra):
    return app.main(["run", "--db", str(db), "--benchmark", "tiny", "--runner", "transformers", "--model", str(model),
                     "--no-progress", "--max-tokens", "4", *extra])


def _run_names(db) -> list[str]:
    return [r[0] for r in Store(db).conn.execute("SELECT name FROM runs").fetchall()]


def test_matrix_covers_the_architectures_that_load_without_torchvision():
    assert {"llava", "llava_next", "gemma3", "idefics3", "paligemma"} <= set(BUILDERS) == set(SEPARATED)


@pytest.mark.parametrize("arch", sorted(BUILDERS))
def test_multi_image_items_batch_1_and_4(models, bench, arch, capsys):
    for bs in (1, 4):
        assert _run(bench, models[arch], "--run", f"{arch}-{bs}", "--batch-size", str(bs), "--probs") == 0
        out = capsys.readouterr()
        assert "4 answered now" in out.out
        assert ("labels are detached from their images" in out.err) is SEPARATED[arch]
        assert ("warning: " in out.out) is SEPARATED[arch]
    a, b = (Store(bench).predictions_frame(f"{arch}-{bs}") for bs in (1, 4))
    assert len(a) == len(b) == 4
    # a local model that answered nothing is invalid, never api_error (that is for failed calls)
    assert set(a["status"]) <= {"ok", "invalid"} and set(b["status"]) <= {"ok", "invalid"}
    for df in (a, b):
        assert (df["tokens"] <= 4).all() and (df["latency"] > 0).all()
        for probs in df["probs"]:
            assert set(probs) == set("ABCD") and abs(sum(probs.values()) - 1) < 1e-3
    # greedy decoding: batching with left padding gives the batch-1 answers and probabilities
    assert list(a["response"]) == list(b["response"])
    for pa, pb in zip(a["probs"], b["probs"], strict=True):
        assert all(abs(pa[k] - pb[k]) < 1e-3 for k in "ABCD")
    cfg = Store(bench).run(f"{arch}-1")["config"]
    assert cfg["runner"] == "transformers" and cfg["model"] == str(models[arch].resolve())
    assert cfg.get("images_separated", False) is SEPARATED[arch]
    assert cfg.get("prompt_format", "chat") == ("plain" if arch == "paligemma" else "chat")
    # which tokens the probabilities sum: the bare and the space-prefixed letter
    assert cfg["probs_tokens"] == {k: [k, "\u0120" + k] for k in "ABCD"}
    # resume: the same command sends nothing
    assert _run(bench, models[arch], "--run", f"{arch}-1", "--batch-size", "1", "--probs") == 0
    assert "0 answered now" in capsys.readouterr().out


def test_run_tab_job_shows_the_warning_while_it_runs(models, bench):
    """The Run tab's progress panel (ui.jobs.progress_html) rendered at every progress step of a job running the
    tiny LLaVA (its template puts every image first): each rendering while the job goes on carries the warning.
    Read inside the job, so a run that ends between two of the page's refreshes cannot hide it (the browser test
    ui/test_ui_run_local.py checks the finished job's line)."""
    from ui.jobs import Jobs, engine_work, progress_html

    panels: list[str] = []

    def work(store, job):  # the Run tab's work, its panel rendered after each step the engine reports
        report = job.progress

        def progress(done: int, total: int) -> None:
            report(done, total)
            panels.append(progress_html(job))

        job.progress = progress
        return engine_work(store, job)

    s = RunSettings(benchmark="tiny", run="warned", runner="transformers", model=str(models["llava"]), max_tokens=4,
                    batch_size=1, progress=False)
    job = Jobs().start(Store(bench), s, None, work=work)
    assert job.thread is not None
    job.thread.join(120)
    assert job.status == "done", job.message
    assert len(panels) == 4
    for panel in panels:
        assert "data-status='running'" in panel and "warning: " in panel and "labels are detached" in panel


def _request(images: list[Path]) -> Request:
    return Request(messages=[prompts.user([*prompts.image_parts(images), text_part("Which? A. x B. y")])],
                   max_tokens=4)


@pytest.mark.parametrize("arch", sorted(BUILDERS))
def test_prompt_holds_one_bos_and_the_images_in_order(models, bench, arch):
    from core.runners.transformers_runner import TransformersRunner, _load_image

    r = TransformersRunner(models[arch])
    imgs = sorted((bench.parent / "data" / "img").glob("test-g0_*.png"))
    assert len(imgs) == 3
    req = _request(imgs)
    inputs = r.inputs([req, _request(imgs[:1])])  # a batch: the second row is left-padded
    bos = r.tokenizer.bos_token_id
    for row, mask in zip(inputs["input_ids"].tolist(), inputs["attention_mask"].tolist(), strict=True):
        real = [t for t, m in zip(row, mask, strict=True) if m]
        assert real.count(bos) == 1
    text = r._prompt(req)
    assert text.startswith(r.tokenizer.bos_token) is TEMPLATE_BOS[arch]
    if TEMPLATE_BOS[arch]:  # what tokenizing the rendered text with special tokens added again gives
        assert r.processor(text=[text], images=[[_load_image(p) for p in imgs]])["input_ids"][0].count(bos) == 2
    # the images reach the model in the order the item lists them
    one = r.inputs([req])
    pics = [_load_image(p) for p in imgs]
    expect = r.processor.image_processor(pics, return_tensors="pt")["pixel_values"]
    reverse = r.processor.image_processor(pics[::-1], return_tensors="pt")["pixel_values"]
    got = one["pixel_values"].reshape(expect.shape)
    assert (got - expect).abs().max().item() < 1e-5
    assert (got - reverse).abs().max().item() > 1e-2


def test_paligemma_plain_format_images_first_then_one_bos(models, bench):
    """PaliGemma ships no chat template: its processor's documented plain format, decided at load."""
    from core.runners.transformers_runner import TransformersRunner

    r = TransformersRunner(models["paligemma"])
    assert r.prompt_format == "plain" and r.images_separated
    imgs = sorted((bench.parent / "data" / "img").glob("test-g0_*.png"))
    ids = r.inputs([_request(imgs)])["input_ids"][0].tolist()
    image_id = r.processor.image_token_id
    n = 3 * r.processor.image_seq_length
    assert ids[:n] == [image_id] * n and ids[n] == r.tokenizer.bos_token_id and ids.count(r.tokenizer.bos_token_id) == 1
    assert r.tokenizer.decode(ids[n + 1:]) == "Image 1:\nImage 2:\nImage 3:\nWhich? A. x B. y\n"


def test_text_only_run_on_an_image_only_processor_is_refused_at_load(models, bench, capsys):
    assert _run(bench, models["paligemma"], "--run", "pt", "--input-mode", "text") == 2
    assert "--input-mode text cannot run on it" in capsys.readouterr().err
    assert "pt" not in _run_names(bench)


def _strip_template(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    for f in ("chat_template.jinja", "chat_template.json"):
        (dst / f).unlink(missing_ok=True)
    cfg = dst / "processor_config.json"
    if cfg.exists():
        data = json.loads(cfg.read_text())
        data.pop("chat_template", None)
        cfg.write_text(json.dumps(data))
    return dst


def test_no_chat_template_and_no_plain_format_is_refused_at_load(models, bench, tmp_path, capsys):
    bare = _strip_template(models["gemma3"], tmp_path / "gemma3-no-template")
    assert _run(bench, bare, "--run", "nt", "--batch-size", "4") == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("error: ") and "has no chat template" in err[-1] and "--chat-template FILE" in err[-1]
    assert "Traceback" not in "\n".join(err)
    assert "nt" not in _run_names(bench)  # refused before the run existed: no run of api_errors


def test_chat_template_file_overrides_the_checkpoints(models, bench, tmp_path, capsys):
    import hashlib

    bare = _strip_template(models["gemma3"], tmp_path / "gemma3-no-template")
    tpl = TEMPLATES / "gemma-3.jinja"
    assert _run(bench, bare, "--run", "ct", "--batch-size", "4", "--chat-template", str(tpl)) == 0
    cfg = Store(bench).run("ct")["config"]
    assert cfg["chat_template"] == {"file": str(tpl.resolve()),
                                    "sha256": hashlib.sha256(tpl.read_bytes()).hexdigest()}
    assert "images_separated" not in cfg
    # an interleaving template on LLaVA: the labels stay with their images, and nothing warns
    capsys.readouterr()
    assert _run(bench, models["llava"], "--run", "ct2", "--batch-size", "4", "--chat-template", str(tpl)) == 0
    out = capsys.readouterr()
    assert "warning" not in out.err and "warning" not in out.out
    assert "images_separated" not in Store(bench).run("ct2")["config"]
    assert len(Store(bench).predictions_frame("ct2")) == 4
    # a template that cannot render a turn of text and images is refused once, at load, not per item
    bad = tmp_path / "bad.jinja"
    bad.write_text("{{ raise_exception('system message required') }}")
    assert _run(bench, models["llava"], "--run", "ct4", "--chat-template", str(bad)) == 2
    err = capsys.readouterr().err
    assert "cannot render a user turn" in err and "system message required" in err and "Traceback" not in err
    assert "ct4" not in _run_names(bench)
    # a template file that is not there is a one-line error, nothing stored
    assert _run(bench, models["llava"], "--run", "ct3", "--chat-template", str(tmp_path / "nope.jinja")) == 2
    assert "--chat-template" in capsys.readouterr().err and "ct3" not in _run_names(bench)


def _has_torchvision() -> bool:
    try:
        import torchvision  # noqa: F401
    except ImportError:
        return False
    return True


def test_processor_needing_torchvision_fails_at_load_with_one_line(bench, tmp_path, capsys):
    """Qwen2-VL's processor builds a video processor that needs torchvision. Where it is missing (this machine,
    CI), loading fails with one line naming it and how to install it, exit 2, before any run exists; on a GPU
    workstation with torchvision, the same folder gets past the processor and fails on its missing weights."""
    qwen = write_qwen2vl(tmp_path / "qwen2vl")
    capsys.readouterr()
    assert _run(bench, qwen, "--run", "qw", "--batch-size", "4") == 2
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.strip() and not ln.startswith("[transformers]")]
    assert lines == [lines[0]] and lines[0].startswith("error: ")
    if _has_torchvision():
        assert "cannot load an image-text-to-text model" in lines[0]
    else:
        assert "'torchvision'" in lines[0] and "make torch-cuda" in lines[0] and "torchvision==0.28.0" in lines[0]
    assert "Traceback" not in err
    assert "qw" not in _run_names(bench)
    # the local judge runner loads checkpoints the same way
    from core.demo import SMALL
    from db.demo import build_demo_store

    db = tmp_path / "j.db"
    build_demo_store(Store(db), sizes=SMALL, progress=lambda m: None)
    assert app.main(["judge", "--db", str(db), "--run", "synth-sb-binder-weak", "--judge-runner", "transformers",
                     "--model", str(qwen), "--judge-run", "qj"]) == 2
    err = capsys.readouterr().err
    assert ("'torchvision'" in err) is not _has_torchvision()
    assert "Traceback" not in err and "qj" not in _run_names(db)


def test_smolvlm_processor_names_the_first_missing_package(tmp_path):
    """SmolVLM's processor needs torchvision and num2words (neither is in requirements.txt): the error names the
    one transformers asks for first, as a MissingPackage with its install command."""
    from core.errors import MissingPackage
    from core.runners.transformers_runner import TransformersRunner

    folder = write_smolvlm(tmp_path / "smolvlm")
    with pytest.raises(MissingPackage) as err:
        TransformersRunner(folder)
    want = "num2words" if _has_torchvision() else "torchvision"
    assert err.value.package == want and f"'{want}'" in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize(("message", "package"), [
    ("Qwen2VLVideoProcessor requires the Torchvision library but it was not found in your environment.", "torchvision"),
    ("Package `num2words` is required to run SmolVLM processor. Install it with `pip install num2words`.",
     "num2words"),
    ("This modeling file requires the following packages that were not found: pip install einops", "einops"),
    ("something else went wrong", None),
])
def test_missing_package_names(message, package):
    from core.runners.transformers_runner import missing_package

    assert missing_package(ImportError(message)) == package


def test_missing_module_error_names_module():
    from core.runners.transformers_runner import missing_package

    assert missing_package(ModuleNotFoundError("No module named 'timm.layers'", name="timm.layers")) == "timm"


def _dialog(text: str) -> Dialog:
    view = ItemView(item_id="i", group_id="g", split="test", kind="Q", variant="v", question="q",
                    options={"A": "x", "B": "y"}, letters="AB", images=[])
    task = Task(view=view, rotation=0, repeat=0, shown=view.options, images=[])

    def gen():
        yield Request(messages=[], max_tokens=4)
        return None

    d = Dialog(task, gen())
    d.feed(Reply(text=text, tokens=1, latency=0.1))
    return d


@pytest.mark.parametrize(("runner", "text", "status"), [
    ("transformers", "", "invalid"),
    ("transformers", "  \n\t", "invalid"),
    ("transformers", "B", "ok"),
    ("openai", "", "api_error"),
    ("openai", "   ", "api_error"),
])
def test_empty_generation_status(runner, text, status):
    d = _dialog(text)
    d.final = text
    s = RunSettings(benchmark="b", run="r", runner=runner, model="m")
    pred = to_prediction(d.task, d, "letter", s, keep_trace=False)
    assert pred.status == status
    assert (pred.error is None) is (status != "api_error")


def _sentencepiece_style(with_spaced: bool):
    """A Metaspace BPE tokenizer as Llama-2 / Gemma ship (" A" is "▁A"), built with `tokenizers`."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {"<unk>": 0, "\u2581": 1, "A": 2, "B": 3, "C": 4}
    merges = []
    if with_spaced:
        vocab.update({"\u2581A": 5, "\u2581B": 6})
        merges = [("\u2581", "A"), ("\u2581", "B")]
    tk = Tokenizer(models.BPE(vocab=vocab, merges=merges, unk_token="<unk>"))
    tk.pre_tokenizer = pre_tokenizers.Metaspace(prepend_scheme="never")
    return PreTrainedTokenizerFast(tokenizer_object=tk, unk_token="<unk>")


@pytest.mark.parametrize(("with_spaced", "expect"), [
    (True, {"A": [2, 5], "B": [3, 6], "C": [4]}),  # C has no "▁C": its bare token only
    (False, {"A": [2], "B": [3], "C": [4]}),
])
def test_letter_candidates_sentencepiece_vocabulary(with_spaced, expect):
    from core.runners.transformers_runner import letter_candidates

    assert letter_candidates(_sentencepiece_style(with_spaced), "ABC") == expect


# logits at the answer position over (A, " A", B, " B"); the probabilities are the softmax over these four
# candidates summed per letter: exp(l) / sum, by hand.
@pytest.mark.parametrize(("logits", "expect"), [
    ({"A": 0.0, " A": 0.0, "B": 0.0, " B": 0.0}, {"A": 0.5, "B": 0.5}),
    ({"A": 0.0, " A": math.log(3), "B": 0.0, " B": 0.0}, {"A": 4 / 6, "B": 2 / 6}),  # 1 + 3 vs 1 + 1
    ({"A": -50.0, " A": math.log(4), "B": 0.0, " B": -50.0}, {"A": 0.8, "B": 0.2}),  # the answer follows a space
    ({"A": math.log(2), " A": -50.0, "B": math.log(2), " B": math.log(6)}, {"A": 0.2, "B": 0.8}),
])
def test_letter_probabilities_sum_bare_and_spaced_tokens(models, logits, expect):
    import torch

    from core.runners.transformers_runner import TransformersRunner

    r = TransformersRunner(models["llava"])
    ids = {k: r.tokenizer.encode(k, add_special_tokens=False) for k in logits}
    assert all(len(v) == 1 for v in ids.values())
    assert r.letter_tokens("AB") == {"A": ids["A"] + ids[" A"], "B": ids["B"] + ids[" B"]}
    row = torch.full((len(r.tokenizer),), -1e4)
    for k, v in logits.items():
        row[ids[k][0]] = v
    probs = r._probs(Request(messages=[], max_tokens=1, letters="AB", probs_after=""), [], [row[None, :]], 0)
    assert probs is not None and set(probs) == {"A", "B"}
    assert all(abs(probs[k] - expect[k]) < 1e-5 for k in expect)


def test_multi_stage_and_text_mode(models, bench):
    assert _run(bench, models["llava"], "--run", "dd", "--strategy", "ddcot", "--input-mode", "first",
                "--batch-size", "4", "--limit", "2") == 0
    assert _run(bench, models["gemma3"], "--run", "tx", "--input-mode", "text", "--batch-size", "4",
                "--rotations", "2") == 0
    dd = Store(bench).predictions_frame("dd")
    assert len(dd) == 2 and all(t.count("[") >= 3 for t in dd["trace"])
    tx = Store(bench).predictions_frame("tx")
    assert len(tx) == 8 and set(tx["input_mode"]) == {"text"}


def test_not_a_local_directory_is_a_clear_error(bench, capsys):
    assert _run(bench, "some-org/some-model", "--run", "x") == 2
    assert "not a local checkpoint directory" in capsys.readouterr().err


def test_local_model_as_l2_judge(models, tmp_path, capsys):
    """The judge pipeline runs on a local checkpoint (Gemma 3: its template writes the BOS): every F trace gets
    a stored judgement with its raw output (a random tiny model writes no valid verdict, so each is stored as
    malformed, never guessed), and --chat-template is recorded in the judge run's config."""
    import hashlib

    from core.demo import SMALL
    from db.demo import build_demo_store

    db = tmp_path / "j.db"
    s = Store(db)
    build_demo_store(s, sizes=SMALL, progress=lambda m: None)
    n_f = int(s.conn.execute(
        "SELECT COUNT(*) FROM predictions p JOIN runs r ON r.id = p.run_id JOIN items i ON i.id = p.item_pk"
        " WHERE r.name = 'synth-sb-binder-weak' AND i.kind = 'F'").fetchone()[0])
    assert n_f > 0
    tpl = TEMPLATES / "gemma-3.jinja"
    assert app.main(["judge", "--db", str(db), "--run", "synth-sb-binder-weak", "--judge-runner", "transformers",
                     "--model", str(models["gemma3"]), "--judge-run", "tiny-judge", "--max-tokens", "8",
                     "--batch-size", "4", "--chat-template", str(tpl)]) == 0
    assert f"{n_f} traces judged" in capsys.readouterr().out
    rows = s.conn.execute(
        "SELECT j.status, j.raw FROM judgements j JOIN runs r ON r.id = j.judge_run_id WHERE r.name = 'tiny-judge'"
    ).fetchall()
    assert len(rows) == n_f
    assert {status for status, _ in rows} <= {"ok", "malformed"}
    assert all(raw is not None for _, raw in rows)
    cfg = s.run("tiny-judge")["config"]
    assert cfg["role"] == "judge" and str(models["gemma3"].resolve()) in json.dumps(cfg, default=str)
    assert hashlib.sha256(tpl.read_bytes()).hexdigest() in json.dumps(cfg, default=str)


# ---- torch / torchvision setup (scripts/torch-setup.sh, run by make run / make test) ---------------------


def _python_with(tmp_path, torch_cuda: str | None, torchvision: bool) -> Path:
    """The script's PYTHON argument (its public seam): this venv's Python seeing a `torch` of the pinned version
    built for `torch_cuda` (None: the CPU build) and, when `torchvision`, the pinned torchvision, whatever torch
    this machine has installed (the script only asks Python for their versions; in a dry run it installs
    nothing)."""
    from core.runners.transformers_runner import TORCH_VERSION, TORCHVISION_VERSION

    site = tmp_path / f"site-{torch_cuda}-{torchvision}"
    (site / "torch").mkdir(parents=True, exist_ok=True)
    (site / "torch" / "__init__.py").write_text(
        f"import types\n__version__ = {TORCH_VERSION!r}\nversion = types.SimpleNamespace(cuda={torch_cuda!r})\n")
    if torchvision:
        (site / "torchvision").mkdir(exist_ok=True)
        (site / "torchvision" / "__init__.py").write_text(f"__version__ = {TORCHVISION_VERSION!r}\n")
    py = site / "python"
    py.write_text(f"#!/bin/sh\nPYTHONPATH={site} exec {ROOT / '.venv/bin/python'} \"$@\"\n")
    py.chmod(0o755)
    return py


def _setup(tmp_path, gpu: bool, *args: str, python: Path | None = None) -> subprocess.CompletedProcess[str]:
    """The script with PATH holding only the tools it calls; `gpu`: an `nvidia-smi` that answers is on it;
    `python`: the PYTHON it is given (default: the CPU torch without torchvision, _python_with)."""
    python = python or _python_with(tmp_path, None, False)
    bin_dir = tmp_path / ("bin-gpu" if gpu else "bin-cpu")
    bin_dir.mkdir(exist_ok=True)
    for tool in ("bash", "env", "cut", "cat"):
        (bin_dir / tool).unlink(missing_ok=True)
        (bin_dir / tool).symlink_to(shutil.which(tool))
    if gpu:
        smi = bin_dir / "nvidia-smi"
        smi.write_text("#!/bin/sh\necho 'GPU 0: NVIDIA H200 (UUID: GPU-0)'\n")
        smi.chmod(0o755)
    env = {"PATH": str(bin_dir), "CROSSCHECK_TORCH_DRY_RUN": "1", "HOME": os.environ.get("HOME", "/tmp")}
    return subprocess.run(["bash", str(ROOT / "scripts" / "torch-setup.sh"), str(python), *args],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)


def test_torch_setup_keeps_the_cpu_torch_without_a_gpu(tmp_path):
    p = _setup(tmp_path, gpu=False)
    assert p.returncode == 0, p.stderr
    assert "keeping the CPU torch 2.13.0" in p.stdout and "pip" not in p.stdout


@pytest.mark.parametrize("how", ["nvidia-smi", "--cuda"])
def test_torch_setup_installs_cuda_torch_and_torchvision_with_a_gpu(tmp_path, how):
    p = _setup(tmp_path, how == "nvidia-smi", *(["--cuda"] if how == "--cuda" else []))
    assert p.returncode == 0, p.stderr
    cmds = [ln[2:] for ln in p.stdout.splitlines() if ln.startswith("+ ")]
    # the CPU build of torch (the stand-in Python's) is replaced by the CUDA build of the same pinned version
    assert "pip uninstall -y -q torch torchvision" in cmds[0]
    assert cmds[1].startswith("env -u PIP_FIND_LINKS PIP_CONFIG_FILE=/dev/null ")
    assert cmds[1].endswith("-c requirements.txt torch==2.13.0 torchvision==0.28.0")


def test_torch_setup_adds_torchvision_to_a_cuda_torch(tmp_path):
    """A GPU workstation whose CUDA torch lacks torchvision: torch is not uninstalled, both are installed."""
    p = _setup(tmp_path, True, python=_python_with(tmp_path, "12.8", False))
    assert p.returncode == 0, p.stderr
    cmds = [ln[2:] for ln in p.stdout.splitlines() if ln.startswith("+ ")]
    assert len(cmds) == 1 and "pip uninstall" not in cmds[0]
    assert cmds[0].endswith("-c requirements.txt torch==2.13.0 torchvision==0.28.0")


def test_torch_setup_keeps_a_cuda_torch_with_torchvision(tmp_path):
    """A GPU workstation set up already (make test there): nothing is installed."""
    p = _setup(tmp_path, True, python=_python_with(tmp_path, "12.8", True))
    assert p.returncode == 0, p.stderr
    assert "CUDA torch 2.13.0 and torchvision 0.28.0 already installed" in p.stdout and "+ " not in p.stdout


def test_pinned_versions_agree():
    from core.runners.transformers_runner import TORCH_VERSION, TORCHVISION_VERSION

    req = (ROOT / "requirements.txt").read_text()
    script = (ROOT / "scripts" / "torch-setup.sh").read_text()
    assert f"torch=={TORCH_VERSION}\n" in req
    assert f"TORCH={TORCH_VERSION}\n" in script and f"TORCHVISION={TORCHVISION_VERSION} " in script
