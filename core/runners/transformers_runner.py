"""Local transformers runner: any image-text-to-text checkpoint directory (SPEC §6).

AutoProcessor + AutoModelForImageTextToText, loaded with `local_files_only=True` from a local directory (a
path that is not a directory is a RunnerError; nothing is ever fetched from a hub). Prompts go through the
processor's chat template with the images interleaved in order. Generation is batched with left padding;
cuda + bfloat16 when a GPU is visible, else cpu + float32; greedy at temperature 0. Option-letter
probabilities are the softmax over the letters' first tokens of the next-token logits at the answer position
(the first generated token, or the token after "<ANSWER>").
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from core.errors import RunnerError
from core.runners.base import Reply, Request


def _load_image(path: Path) -> Any:
    from PIL import Image

    with Image.open(path) as im:
        return im.convert("RGB")


class TransformersRunner:
    """Batched generation with a local checkpoint. `generate(requests)` answers a batch."""

    kind = "transformers"

    def __init__(self, model_path: str | os.PathLike[str], device: str | None = None, dtype: str | None = None) -> None:
        path = Path(model_path).expanduser()
        if not path.is_dir():
            raise RunnerError(f"--model {str(model_path)!r} is not a local checkpoint directory; the transformers "
                              "runner never downloads from a hub (download it first, then pass its folder)")
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        try:
            import torch
            from transformers import AutoModelForImageTextToText, AutoProcessor
        except ImportError as exc:
            raise RunnerError("the transformers runner needs torch and transformers: "
                              "pip install -r requirements.txt") from exc
        self.torch = torch
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        self.dtype = getattr(torch, dtype) if dtype else (torch.bfloat16 if self.device.startswith("cuda")
                                                         else torch.float32)
        self.path = path.resolve()
        try:
            self.processor = AutoProcessor.from_pretrained(self.path, local_files_only=True)
            self.model = AutoModelForImageTextToText.from_pretrained(self.path, local_files_only=True,
                                                                     dtype=self.dtype)
        except (OSError, ValueError, KeyError) as exc:
            raise RunnerError(f"cannot load an image-text-to-text model from {self.path}: {exc}") from exc
        self.model.to(self.device).eval()  # type: ignore[arg-type]
        self.tokenizer = getattr(self.processor, "tokenizer", self.processor)
        self.tokenizer.padding_side = "left"
        if self.tokenizer.pad_token_id is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self.stop_ids = {i for i in (self.tokenizer.pad_token_id, self.tokenizer.eos_token_id,
                                     self.model.generation_config.eos_token_id) if isinstance(i, int)}
        if isinstance(self.model.generation_config.eos_token_id, list):
            self.stop_ids |= set(self.model.generation_config.eos_token_id)

    def identity(self) -> dict[str, Any]:
        return {"model": str(self.path)}

    def letter_ids(self, letters: str) -> dict[str, int]:
        """The first token of each option letter (the token a one-letter answer starts with)."""
        out = {}
        for letter in letters:
            ids = self.tokenizer.encode(letter, add_special_tokens=False)
            if ids:
                out[letter] = ids[0]
        return out

    def _chat(self, request: Request) -> str:
        messages = [{"role": m["role"], "content": [{"type": "image"} if p["type"] == "image"
                                                    else {"type": "text", "text": p["text"]} for p in m["content"]]}
                    for m in request.messages]
        return self.processor.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)

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
        texts = [self._chat(r) for r in requests]
        images = [[_load_image(p) for p in r.images()] for r in requests]
        kwargs: dict[str, Any] = {"text": texts, "return_tensors": "pt", "padding": True}
        if any(images):
            kwargs["images"] = images
        inputs = self.processor(**kwargs).to(self.device)
        if "pixel_values" in inputs:
            inputs["pixel_values"] = inputs["pixel_values"].to(self.dtype)
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
        """Softmax over the letters' first tokens at the answer position; None when there is none."""
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
        lid = self.letter_ids(req.letters)
        if not lid:
            return None
        logits = scores[step][row].float()
        chosen = torch.tensor(list(lid.values()), device=logits.device)
        p = torch.softmax(logits[chosen], dim=-1).tolist()
        return {letter: round(float(v), 6) for letter, v in zip(lid, p, strict=True)}
