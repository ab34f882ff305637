"""Real Inspect AI logs for the tests, written by inspect_ai itself: `python tests/inspect_logs.py OUT_DIR`.

A tiny multiple-choice task (inspect_ai's `multiple_choice` solver and `choice` scorer) runs on Inspect's
`mockllm` model, offline, and Inspect's own recorders write the logs. Run in a subprocess by the tests: Inspect
sets up its own logging, event loop and display in the process that evaluates.

Written into OUT_DIR:
- `mc.eval`: 4 samples x 2 epochs (an image as a data URI, metadata group_id, a reasoning part, an answer with no
  letter), the .eval zip Inspect writes by default;
- `mc.json`: the same task by another mock model, as a .json log;
- `cancelled.eval`: a log whose eval was cancelled after 3 samples (inspect_ai's write_eval_log);
- `running.eval`: a log still being written (Inspect's recorder after 2 samples, before the eval finished: no
  header.json);
- `expected.json`: Inspect's own score of each sample of mc.eval and mc.json, read back with read_eval_log.

The stand-in encoding: inspect_ai counts tokens with tiktoken's `o200k_base` (model/_tokens.py), whose BPE file
tiktoken downloads on first use, and this machine has no network. A pre-filled tiktoken cache cannot stand in:
tiktoken checks the cached file against the real file's SHA-256. So a tiny byte-level Encoding (256 single-byte
tokens, no merges) is put in tiktoken's registry of built encodings under the name Inspect asks for; it only
changes the token counts Inspect writes as usage, never what the model answered or how it was scored.
"""

from __future__ import annotations

import asyncio
import base64
import io
import json
import shutil
import sys
from pathlib import Path

GOLD = {"q1": "B", "q2": "A", "q3": "C", "q4": "A"}
# the mock model's answers, in order of its calls: right, wrong, no letter, right (twice over, for epoch 2)
ANSWERS = ["ANSWER: B", "ANSWER: B", "I cannot tell from the image.", "ANSWER: A"] * 2


def stand_in_encoding() -> None:
    import tiktoken.registry
    from tiktoken.core import Encoding

    tiktoken.registry.ENCODINGS["o200k_base"] = Encoding(
        name="o200k_base", pat_str=r"\S+|\s+", mergeable_ranks={bytes([i]): i for i in range(256)}, special_tokens={})


def png_uri(color: tuple[int, int, int]) -> str:
    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", (12, 8), color).save(buf, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def samples() -> list:
    from inspect_ai.dataset import Sample
    from inspect_ai.model import ChatMessageUser, ContentImage, ContentText

    image_q = [ChatMessageUser(content=[ContentText(text="What colour is the square?"),
                                        ContentImage(image=png_uri((200, 0, 0)))])]
    return [
        Sample(id="q1", input=image_q, choices=["green", "red", "blue"], target="B",
               metadata={"group_id": "colour", "source": "fixture"}),
        Sample(id="q2", input="Is 7 prime?", choices=["yes", "no"], target="A", metadata={"group_id": "maths"}),
        Sample(id="q3", input="Which is largest?", choices=["2", "5", "9"], target="C", metadata={"group_id": "maths"}),
        Sample(id="q4", input="Pick the first letter.", choices=["a", "b"], target="A"),
    ]


def outputs(model: str) -> list:
    from inspect_ai.model import ChatMessageAssistant, ContentReasoning, ContentText, ModelOutput

    out = [ModelOutput.from_content(model, a) for a in ANSWERS]
    # the first answer carries a reasoning part before its text, as a reasoning model's output does
    out[0] = ModelOutput.from_message(ChatMessageAssistant(
        content=[ContentReasoning(reasoning="The square is red, the second option."), ContentText(text="ANSWER: B")],
        model=model))
    return out


def task(epochs: int = 2):
    from inspect_ai import Task
    from inspect_ai.scorer import choice
    from inspect_ai.solver import multiple_choice

    return Task(name="mc", dataset=samples(), solver=multiple_choice(), scorer=choice(), epochs=epochs)


def run(out: Path, model: str, fmt: str, name: str) -> Path:
    from inspect_ai import eval as inspect_eval
    from inspect_ai.model import get_model

    logs = inspect_eval(task(), model=get_model(model, custom_outputs=outputs(model)), log_dir=str(out / "raw"),
                        log_format=fmt, display="none", max_samples=1, max_connections=1)
    assert logs[0].status == "success", logs[0].error
    target = out / name
    shutil.move(logs[0].location, target)
    return target


def cancelled(out: Path, source: Path) -> None:
    from inspect_ai.log import read_eval_log, write_eval_log

    log = read_eval_log(str(source))
    log.status = "cancelled"
    log.samples = (log.samples or [])[:3]
    write_eval_log(log, str(out / "cancelled.eval"))


def running(out: Path, source: Path) -> None:
    """Inspect's .eval recorder as an eval drives it (init, start, two samples, flush) and never finished."""
    from inspect_ai.log import read_eval_log
    from inspect_ai.log._recorders.eval import EvalRecorder

    log = read_eval_log(str(source))

    async def write() -> None:
        recorder = EvalRecorder(str(out / "rec"))
        location = await recorder.log_init(log.eval)
        await recorder.log_start(log.eval, log.plan)
        for sample in (log.samples or [])[:2]:
            await recorder.log_sample(log.eval, sample)
        await recorder.flush(log.eval)
        shutil.copy(location, out / "running.eval")

    asyncio.run(write())


def expected(paths: list[Path]) -> dict:
    from inspect_ai.log import read_eval_log

    got = {}
    for path in paths:
        log = read_eval_log(str(path))
        got[path.name] = {f"{s.id}/{s.epoch}": (s.scores or {})["choice"].value for s in log.samples or []}
    return got


def main(out: Path) -> None:
    stand_in_encoding()
    out.mkdir(parents=True, exist_ok=True)
    ev = run(out, "mockllm/model", "eval", "mc.eval")
    js = run(out, "mockllm/other", "json", "mc.json")
    cancelled(out, ev)
    running(out, ev)
    (out / "expected.json").write_text(json.dumps(expected([ev, js])))
    shutil.rmtree(out / "raw", ignore_errors=True)
    shutil.rmtree(out / "rec", ignore_errors=True)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
