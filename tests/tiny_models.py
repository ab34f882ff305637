"""Offline builders of tiny image-text-to-text checkpoints (no hub, no torchvision).

Each builder writes a config, a byte-level BPE tokenizer made with the `tokenizers` library, a PIL image
processor and a chat template into a folder with `save_pretrained`, so that the runner can load it back
through `AutoProcessor` / `AutoModelForImageTextToText` exactly as it loads a real checkpoint.
Random weights: the models answer nonsense, which is what the tests want (parsing then decides ok / invalid).
"""

from __future__ import annotations

from pathlib import Path

# A generic chat template: images are interleaved where the message content puts them.
LLAVA_TEMPLATE = (
    "{% for message in messages %}<|{{ message['role'] }}|>"
    "{% if message['content'] is string %}{{ message['content'] }}{% else %}"
    "{% for part in message['content'] %}{% if part['type'] == 'image' %}<image>"
    "{% elif part['type'] == 'text' %}{{ part['text'] }}{% endif %}{% endfor %}{% endif %}<|end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|assistant|>{% endif %}"
)


def _tokenizer(specials: list[str], extra: dict[str, str] | None = None):
    """A byte-level BPE tokenizer without merges: every byte is a token, so any text (Chinese too) encodes."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    alphabet = pre_tokenizers.ByteLevel.alphabet()
    vocab = {ch: i for i, ch in enumerate(sorted(alphabet))}
    for tok in specials:
        vocab[tok] = len(vocab)
    tk = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    tk.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tk.decoder = decoders.ByteLevel()
    tk.add_special_tokens(specials)
    fast = PreTrainedTokenizerFast(tokenizer_object=tk, pad_token="<pad>", eos_token="<eos>", bos_token="<bos>",
                                   extra_special_tokens=extra or {})
    fast.padding_side = "left"
    return fast


def build_llava(path: Path, seed: int = 0) -> Path:
    """A LLaVA checkpoint: CLIP vision tower (16 px, 8 px patches -> 4 image tokens) + 1-layer Llama."""
    import torch
    from transformers import (
        CLIPImageProcessor,
        CLIPVisionConfig,
        LlamaConfig,
        LlavaConfig,
        LlavaForConditionalGeneration,
        LlavaProcessor,
    )

    specials = ["<pad>", "<eos>", "<bos>", "<image>", "<|end|>", "<|user|>", "<|assistant|>", "<|system|>"]
    tok = _tokenizer(specials)
    image_id = tok.convert_tokens_to_ids("<image>")
    text = LlamaConfig(
        vocab_size=len(tok), hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2,
        num_key_value_heads=2, max_position_embeddings=2048, pad_token_id=tok.pad_token_id,
        eos_token_id=tok.eos_token_id, bos_token_id=tok.bos_token_id,
    )
    vision = CLIPVisionConfig(
        hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2, image_size=16,
        patch_size=8, projection_dim=16,
    )
    config = LlavaConfig(
        vision_config=vision, text_config=text, image_token_index=image_id, vision_feature_layer=-1,
        vision_feature_select_strategy="default", projector_hidden_act="gelu",
    )
    torch.manual_seed(seed)
    model = LlavaForConditionalGeneration(config).eval()
    model.generation_config.pad_token_id = tok.pad_token_id
    model.generation_config.eos_token_id = tok.eos_token_id
    improc = CLIPImageProcessor(size={"shortest_edge": 16}, crop_size={"height": 16, "width": 16})
    proc = LlavaProcessor(
        image_processor=improc, tokenizer=tok, patch_size=8, vision_feature_select_strategy="default",
        chat_template=LLAVA_TEMPLATE, num_additional_image_tokens=1,
    )
    path.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(path)
    proc.save_pretrained(path)
    return path


GEMMA_TEMPLATE = (
    "{{ bos_token }}{% for message in messages %}<start_of_turn>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}{% else %}"
    "{% for part in message['content'] %}{% if part['type'] == 'image' %}<start_of_image>"
    "{% elif part['type'] == 'text' %}{{ part['text'] }}{% endif %}{% endfor %}{% endif %}<end_of_turn>\n"
    "{% endfor %}{% if add_generation_prompt %}<start_of_turn>model\n{% endif %}"
)


def build_gemma3(path: Path, seed: int = 0) -> Path:
    """A Gemma 3 checkpoint: SigLIP tower (16 px, 8 px patches, pooled to 4 tokens) + 1-layer Gemma 3 text."""
    import torch
    from transformers import (
        Gemma3Config,
        Gemma3ForConditionalGeneration,
        Gemma3ImageProcessor,
        Gemma3Processor,
    )

    specials = ["<pad>", "<eos>", "<bos>", "<start_of_turn>", "<end_of_turn>", "<start_of_image>",
                "<end_of_image>", "<image_soft_token>"]
    tok = _tokenizer(specials, extra={"boi_token": "<start_of_image>", "eoi_token": "<end_of_image>",
                                      "image_token": "<image_soft_token>"})
    ids = {s: tok.convert_tokens_to_ids(s) for s in specials}
    config = Gemma3Config(
        text_config={
            "vocab_size": len(tok), "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 1,
            "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 16, "max_position_embeddings": 2048,
            "sliding_window": 64, "pad_token_id": tok.pad_token_id, "eos_token_id": tok.eos_token_id,
            "bos_token_id": tok.bos_token_id,
        },
        vision_config={"hidden_size": 16, "intermediate_size": 32, "num_hidden_layers": 1, "num_attention_heads": 2,
                       "image_size": 16, "patch_size": 4},
        mm_tokens_per_image=4, boi_token_index=ids["<start_of_image>"], eoi_token_index=ids["<end_of_image>"],
        image_token_index=ids["<image_soft_token>"],
    )
    torch.manual_seed(seed)
    model = Gemma3ForConditionalGeneration(config).eval()
    model.generation_config.pad_token_id = tok.pad_token_id
    model.generation_config.eos_token_id = tok.eos_token_id
    improc = Gemma3ImageProcessor(size={"height": 16, "width": 16})
    proc = Gemma3Processor(image_processor=improc, tokenizer=tok, chat_template=GEMMA_TEMPLATE, image_seq_length=4)
    path.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(path)
    proc.save_pretrained(path)
    return path


BUILDERS = {"llava": build_llava, "gemma3": build_gemma3}


def write_benchmark(folder: Path, n_groups: int = 3, per_group: int = 3, n_images: int = 3, splits: tuple[str, ...] = ("train", "test"),
                    family: str = "generic", name: str = "tiny", question: str = "Which direction is it?") -> Path:
    """A small multi-image items JSONL (generic family) with distinct PNGs per group, for end-to-end runs.

    Item ids are "<split>-g<group>-<i>"; every item shows `n_images` images whose colours encode (group, index),
    so image order can be checked from the bytes a runner sends."""
    import json

    from PIL import Image

    folder.mkdir(parents=True, exist_ok=True)
    (folder / "img").mkdir(exist_ok=True)
    lines = []
    for split in splits:
        for g in range(n_groups):
            gid = f"{split}-g{g}"
            names = []
            for k in range(n_images):
                color = (40 + 60 * (splits.index(split)), 10 + 20 * g, 30 + 50 * k)
                fname = f"img/{gid}_{k}.png"
                Image.new("RGB", (16 + 4 * k, 16), color).save(folder / fname)
                names.append(fname)
            for i in range(per_group):
                lines.append({
                    "benchmark": family, "item_id": f"{gid}-{i}", "group_id": gid, "split": split, "kind": "Q",
                    "variant": f"v{i}", "images": names, "question": f"{question} [item {gid}-{i}]",
                    "options": {"A": "前", "B": "后", "C": "左", "D": "右"}, "answer": "ABCD"[(g + i) % 4],
                    "meta": {},
                })
    path = folder / f"{name}.jsonl"
    path.write_text("\n".join(json.dumps(x, ensure_ascii=False) for x in lines) + "\n", encoding="utf-8")
    return path
