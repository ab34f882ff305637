"""Local transformers runner: any image-text-to-text checkpoint directory (SPEC §6, docs/RUNNERS.md).

AutoProcessor + AutoModelForImageTextToText, loaded with `local_files_only=True` from a local directory (a
path that is not a directory is a RunnerError; nothing is ever fetched from a hub). Everything about the
prompt is decided once, at load, before any item is sent:

- the prompt format: the checkpoint's chat template (or the `chat_template` file that overrides it); without
  one, the processor's documented plain format (PLAIN_FORMATS); otherwise a refusal (RunnerError);
- whether the template keeps each "Image i:" label next to its image (`images_separated`, from rendering a
  probe conversation with and without its images);
- a processor or model that needs a package which is not installed (torchvision, num2words, ...) is a
  `MissingPackage` naming the package and the command that installs it.

Prompts hold one BOS: a rendered template that already starts with the BOS token is tokenized without
adding special tokens, as transformers' own `apply_chat_template(tokenize=True)` does; one that does not
(LLaVA-NeXT) keeps the tokenizer's. Generation is batched with left padding; cuda + bfloat16 when a GPU is
visible, else cpu + float32; greedy at temperature 0. Option-letter probabilities: at the answer position
(the first generated token, or the token after "<ANSWER>"), the softmax over every candidate token of every
letter (the bare letter and the space-prefixed one, where the vocabulary has it), summed per letter.
"""

from __future__ import annotations

import hashlib
import os
import re
import time
from pathlib import Path
from typing import Any

from core.errors import MissingPackage, RunnerError
from core.runners.base import Reply, Request, RunnerBase

TORCH_VERSION = "2.13.0"  # requirements.txt
TORCHVISION_VERSION = "0.28.0"  # the torchvision built against torch 2.13.0 (its wheel requires torch==2.13.0)
# How to install a package a processor or model asks for (pip name, command).
INSTALL = {
    "torchvision": f"make torch-cuda on a GPU workstation (CUDA torch {TORCH_VERSION} + torchvision "
                   f"{TORCHVISION_VERSION}), or pip install torchvision=={TORCHVISION_VERSION} where the CUDA "
                   f"torch {TORCH_VERSION} is installed",
    "num2words": "pip install num2words",
    "timm": "pip install timm",
    "einops": "pip install einops",
    "sentencepiece": "pip install sentencepiece",
    "protobuf": "pip install protobuf",
    "accelerate": "pip install accelerate",
    "av": "pip install av",
    "decord": "pip install decord",
}
# transformers' names of backends (requires_backends messages) -> pip names
_BACKEND_NAMES = {"torchvision": "torchvision", "pil": "pillow", "pytorch": "torch", "tokenizers": "tokenizers"}
# Processors without a chat template whose plain prompt format is documented: the prompt is the text of the
# conversation and the processor places the image tokens (and the BOS) itself.
# PaliGemma: `<image> * n + <bos> + prompt + "\n"` (transformers PaliGemmaProcessor; big_vision's format).
PLAIN_FORMATS = {"PaliGemmaProcessor": "images first, then <bos>, the prompt and a newline"}
_PROBE = ("\u00a7L1\u00a7", "\u00a7L2\u00a7", "\u00a7Q\u00a7")  # sentinels no template rewrites


def missing_package(exc: BaseException) -> str | None:
    """The package an ImportError asks for, or None when it names none."""
    name = getattr(exc, "name", None)
    if isinstance(exc, ModuleNotFoundError) and name:
        return str(name).split(".")[0]
    text = str(exc)
    m = re.search(r"requires the (\S+) librar", text)
    if m:
        raw = m.group(1).strip("`'\"").lower()
        return _BACKEND_NAMES.get(raw, raw)
    m = re.search(r"[Pp]ackage `?([\w.-]+)`? (?:is|are) required", text) or re.search(r"pip install ([\w.-]+)", text)
    return m.group(1).lower() if m else None


def _missing(path: Path, exc: ImportError, what: str) -> MissingPackage:
    pkg = missing_package(exc)
    if pkg is None:
        first = next((ln.strip() for ln in str(exc).splitlines() if ln.strip()), type(exc).__name__)
        return MissingPackage(f"cannot load the {what} of {path}: {first}", package=None)
    how = INSTALL.get(pkg, f"pip install {pkg}")
    return MissingPackage(f"cannot load the {what} of {path}: it needs the package {pkg!r}, which is not "
                          f"installed; install it with: {how}", package=pkg)


def letter_candidates(tokenizer: Any, letters: str) -> dict[str, list[int]]:
    """Each letter's candidate answer tokens: the first token of the bare letter as the tokenizer encodes it,
    the space-prefixed letter where it encodes to one token, and the vocabulary's own "A", "ĠA" (byte-level
    BPE) and "▁A" (SentencePiece) entries; each token once, in that order."""
    vocab = tokenizer.get_vocab()
    out: dict[str, list[int]] = {}
    for letter in letters:
        bare = tokenizer.encode(letter, add_special_tokens=False)
        spaced = tokenizer.encode(" " + letter, add_special_tokens=False)
        found = bare[:1] + (spaced if len(spaced) == 1 else []) + [
            vocab[t] for t in (letter, "\u0120" + letter, "\u2581" + letter) if t in vocab]
        ids: list[int] = []
        for i in found:
            if i not in ids:
                ids.append(i)
        if ids:
            out[letter] = ids
    return out


def _load_image(path: Path) -> Any:
    from PIL import Image

    with Image.open(path) as im:
        return im.convert("RGB")


class TransformersRunner(RunnerBase):
    """Batched generation with a local checkpoint. `generate(requests)` answers a batch."""

    kind = "transformers"

    def __init__(self, model_path: str | os.PathLike[str], device: str | None = None,
                 chat_template: str | os.PathLike[str] | None = None) -> None:
        path = Path(model_path).expanduser()
        if not path.is_dir():
            raise RunnerError(f"--model {str(model_path)!r} is not a local checkpoint directory; the transformers "
                              "runner never downloads from a hub (download it first, then pass its folder)")
        template_file: Path | None = None
        template_text: str | None = None
        if chat_template:
            template_file = Path(chat_template).expanduser().resolve()
            try:
                template_text = template_file.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                raise RunnerError(f"--chat-template {str(chat_template)!r}: cannot read it ({exc})") from exc
            if not template_text.strip():
                raise RunnerError(f"--chat-template {str(template_file)!r} is empty; expected a Jinja chat template")
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        try:
            import torch
            from transformers import AutoModelForImageTextToText, AutoProcessor
        except ImportError as exc:
            raise RunnerError("the transformers runner needs torch and transformers: "
                              "pip install -r requirements.txt") from exc
        self.torch = torch
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        self.dtype = torch.bfloat16 if self.device.startswith("cuda") else torch.float32
        self.path = path.resolve()
        try:
            self.processor = AutoProcessor.from_pretrained(self.path, local_files_only=True)
        except ImportError as exc:
            raise _missing(self.path, exc, "processor") from exc
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise RunnerError(f"cannot load the processor of {self.path}: {_first_line(exc)}") from exc
        self.tokenizer = getattr(self.processor, "tokenizer", self.processor)
        self._letter_cache: dict[str, dict[str, list[int]]] = {}
        self.template_file = template_file
        self.template_sha256 = hashlib.sha256(template_text.encode()).hexdigest() if template_text else None
        if template_text is not None:
            self.processor.chat_template = template_text
        self.prompt_format = self._decide_format()
        # PaliGemma's processor refuses a prompt without an image: a text-only run is refused before it starts
        self.requires_images = type(self.processor).__name__ == "PaliGemmaProcessor"
        self.images_separated = self._images_separated()
        try:
            self.model = AutoModelForImageTextToText.from_pretrained(self.path, local_files_only=True,
                                                                     dtype=self.dtype)
        except ImportError as exc:
            raise _missing(self.path, exc, "model") from exc
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise RunnerError(f"cannot load an image-text-to-text model from {self.path}: {_first_line(exc)}") from exc
        self.model.to(self.device).eval()  # type: ignore[arg-type]
        self.tokenizer.padding_side = "left"
        if self.tokenizer.pad_token_id is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self.stop_ids = {i for i in (self.tokenizer.pad_token_id, self.tokenizer.eos_token_id,
                                     self.model.generation_config.eos_token_id) if isinstance(i, int)}
        if isinstance(self.model.generation_config.eos_token_id, list):
            self.stop_ids |= set(self.model.generation_config.eos_token_id)

    # ---- decided once, at load -------------------------------------------------------------------------

    def _decide_format(self) -> str:
        if getattr(self.processor, "chat_template", None):
            return "chat"
        cls = type(self.processor).__name__
        if cls in PLAIN_FORMATS:
            return "plain"
        raise RunnerError(
            f"{self.path} has no chat template and its processor ({cls}) has no documented plain prompt format; "
            "pass --chat-template FILE with the template the checkpoint was trained with")

    def _images_separated(self) -> bool:
        """True when the prompt does not put each image right after its label: every image first (LLaVA-NeXT
        / OneVision templates, PaliGemma's plain format). Found by rendering "L1 <img> L2 <img> Q" with and
        without the images: an interleaving template adds something between L1 and L2 and between L2 and Q."""
        if self.prompt_format == "plain":
            return True
        l1, l2, q = _PROBE
        with_images = [{"type": "text", "text": l1}, {"type": "image"}, {"type": "text", "text": l2},
                       {"type": "image"}, {"type": "text", "text": q}]
        try:
            a = self._render([{"role": "user", "content": with_images}])
            b = self._render([{"role": "user", "content": [p for p in with_images if p["type"] == "text"]}])
        except Exception as exc:  # noqa: BLE001 - a template error of any kind: refused once, at load
            raise RunnerError(f"the chat template of {self.path} cannot render a user turn of text and images "
                              f"({type(exc).__name__}: {_first_line(exc)}); pass --chat-template FILE") from exc
        try:
            spans_a = (a[a.index(l1) + len(l1):a.index(l2)], a[a.index(l2) + len(l2):a.index(q)])
            spans_b = (b[b.index(l1) + len(l1):b.index(l2)], b[b.index(l2) + len(l2):b.index(q)])
        except ValueError:  # the template reorders or drops text: the labels cannot be trusted to sit anywhere
            return True
        return not all(x != y for x, y in zip(spans_a, spans_b, strict=True))

    def identity(self) -> dict[str, Any]:
        """The model folder and the prompt decisions that change answers (stored with the run's config)."""
        out: dict[str, Any] = {"model": str(self.path)}
        if self.template_file is not None:
            out["chat_template"] = {"file": str(self.template_file), "sha256": self.template_sha256}
        if self.prompt_format != "chat":
            out["prompt_format"] = self.prompt_format
        if self.images_separated:
            out["images_separated"] = True
        return out

    def warnings(self) -> list[str]:
        if not self.images_separated:
            return []
        where = ("its processor's plain prompt format" if self.prompt_format == "plain"
                 else "its chat template")
        return [f"{where} puts every image before the text, so the \"Image i:\" labels are detached from their "
                "images (recorded in the run config as images_separated; --chat-template FILE overrides the "
                "template)"]

    # ---- prompts ---------------------------------------------------------------------------------------

    def letter_tokens(self, letters: str) -> dict[str, list[int]]:
        """Each letter's candidate answer tokens (`letter_candidates`), computed once per letter set."""
        if letters not in self._letter_cache:
            self._letter_cache[letters] = letter_candidates(self.tokenizer, letters)
        return self._letter_cache[letters]

    def letter_token_strings(self, letters: str) -> dict[str, list[str]]:
        """`letter_tokens` as token strings (what the run config records as probs_tokens)."""
        return {k: [str(t) for t in self.tokenizer.convert_ids_to_tokens(v)] for k, v in self.letter_tokens(letters).items()}

    def _render(self, messages: list[dict[str, Any]]) -> str:
        return str(self.processor.apply_chat_template(messages, add_generation_prompt=True, tokenize=False))

    def _prompt(self, request: Request) -> str:
        if self.prompt_format == "plain":  # the processor adds the image tokens and the BOS
            return "\n".join(p["text"] for m in request.messages for p in m["content"] if p["type"] == "text")
        messages = [{"role": m["role"], "content": [{"type": "image"} if p["type"] == "image"
                                                    else {"type": "text", "text": p["text"]} for p in m["content"]]}
                    for m in request.messages]
        return self._render(messages)

    def inputs(self, requests: list[Request]) -> Any:
        """The processor's batch for `requests` (input_ids, attention_mask, pixel_values ...), on the device."""
        texts = [self._prompt(r) for r in requests]
        images = [[_load_image(p) for p in r.images()] for r in requests]
        kwargs: dict[str, Any] = {"text": texts, "return_tensors": "pt", "padding": True}
        bos = getattr(self.tokenizer, "bos_token", None)
        if self.prompt_format == "chat" and bos:
            starts = [t.startswith(bos) for t in texts]
            if all(starts):
                kwargs["add_special_tokens"] = False
            elif any(starts):  # never in one run's batches; keep one BOS per row all the same
                kwargs["text"] = [t[len(bos):] if s else t for t, s in zip(texts, starts, strict=True)]
        if any(images):
            kwargs["images"] = images
        inputs = self.processor(**kwargs).to(self.device)
        if "pixel_values" in inputs:
            inputs["pixel_values"] = inputs["pixel_values"].to(self.dtype)
        return inputs

    # ---- generation ------------------------------------------------------------------------------------

    def generate(self, requests: list[Request]) -> list[Reply]:
        """Answer `requests` in as few batched `generate` calls as their settings allow; order is kept."""
        replies: list[Reply | None] = [None] * len(requests)
        groups: dict[tuple[Any, ...], list[int]] = {}
        for i, r in enumerate(requests):
            groups.setdefault((bool(r.images()), r.max_tokens, r.temperature, r.probs_after is not None), []).append(i)
        for idx in groups.values():
            for i, reply in zip(idx, self._generate_batch([requests[i] for i in idx]), strict=True):
                replies[i] = reply
        return [r for r in replies if r is not None]

    def _generate_batch(self, requests: list[Request]) -> list[Reply]:
        torch = self.torch
        t0 = time.perf_counter()
        inputs = self.inputs(requests)
        first = requests[0]
        want_probs = first.probs_after is not None
        gen: dict[str, Any] = {"max_new_tokens": first.max_tokens, "return_dict_in_generate": True,
                               "output_logits": want_probs, "pad_token_id": self.tokenizer.pad_token_id}
        if first.temperature > 0:
            gen.update(do_sample=True, temperature=first.temperature)
        else:
            gen.update(do_sample=False, temperature=None, top_p=None, top_k=None)
        with torch.inference_mode():
            out = self.model.generate(**inputs, **gen)
        new = out.sequences[:, inputs["input_ids"].shape[1]:].tolist()
        seconds = (time.perf_counter() - t0) / len(requests)
        replies = []
        for b, (req, ids) in enumerate(zip(requests, new, strict=True)):
            n = next((i for i, t in enumerate(ids) if t in self.stop_ids), len(ids))
            text = self.tokenizer.decode(ids[:n], skip_special_tokens=True)
            probs = self._probs(req, ids[:n], out.logits, b) if want_probs else None
            replies.append(Reply(text=text, tokens=n, latency=seconds, probs=probs))
        return replies

    def _probs(self, req: Request, ids: list[int], scores: Any, row: int) -> dict[str, float] | None:
        """Softmax over every letter's candidate tokens at the answer position, summed per letter; None when
        there is no answer position."""
        torch = self.torch
        step: int | None = 0
        if req.probs_after:
            step = None
            for i in range(1, len(ids) + 1):
                if self.tokenizer.decode(ids[:i], skip_special_tokens=False).endswith(req.probs_after):
                    step = i
                    break
        if step is None or step >= len(scores):
            return None
        cand = self.letter_tokens(req.letters)
        if not cand:
            return None
        logits = scores[step][row].float()
        flat = [t for ts in cand.values() for t in ts]
        p = torch.softmax(logits[torch.tensor(flat, device=logits.device)], dim=-1).tolist()
        out, k = {}, 0
        for letter, ts in cand.items():
            out[letter] = round(float(sum(p[k:k + len(ts)])), 6)
            k += len(ts)
        return out


def _first_line(exc: BaseException) -> str:
    return next((ln.strip() for ln in str(exc).splitlines() if ln.strip()), type(exc).__name__)
