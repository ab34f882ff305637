"""Offline builders of tiny image-text-to-text checkpoints of real architectures (no hub, no torchvision).

Each builder writes a config, a byte-level BPE tokenizer made with the `tokenizers` library (the
architecture's real special tokens, its real BOS behaviour as a post-processor, and one-token " A".." H" as
real vocabularies have), a PIL image processor and the checkpoint's real chat template (a file under
tests/chat_templates/) into a folder with `save_pretrained`, so that the runner loads it back through
`AutoProcessor` / `AutoModelForImageTextToText` exactly as it loads a real checkpoint. Random weights, tiny
dims, 16 px images: the models answer nonsense, which is what the tests want.
"""

from __future__ import annotations

import json
from pathlib import Path

TEMPLATES = Path(__file__).parent / "chat_templates"
LETTERS = "ABCDEFGH"


def template(name: str) -> str:
    return (TEMPLATES / f"{name}.jinja").read_text(encoding="utf-8")


def _tokenizer(specials: list[str], bos: str, eos: str, pad: str, add_bos: bool = True,
               extra: dict[str, str] | None = None, unk: str | None = None):
    """Byte-level BPE: every byte is a token, plus one merge per option letter so that " A" is one token.
    `add_bos`: the tokenizer puts `bos` in front of every encoding (Llama, Gemma), as the real one does."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    vocab = {ch: i for i, ch in enumerate(sorted(pre_tokenizers.ByteLevel.alphabet()))}
    merges = []
    for letter in LETTERS:
        vocab["\u0120" + letter] = len(vocab)
        merges.append(("\u0120", letter))
    for tok in specials:
        vocab[tok] = len(vocab)
    tk = Tokenizer(models.BPE(vocab=vocab, merges=merges))
    tk.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tk.decoder = decoders.ByteLevel()
    tk.add_special_tokens(specials)
    if add_bos:
        tk.post_processor = processors.TemplateProcessing(
            single=f"{bos} $A", pair=f"{bos} $A {bos} $B", special_tokens=[(bos, vocab[bos])])
    kw = {"unk_token": unk} if unk else {}
    fast = PreTrainedTokenizerFast(tokenizer_object=tk, pad_token=pad, eos_token=eos, bos_token=bos,
                                   extra_special_tokens=extra or {}, **kw)
    fast.padding_side = "left"
    return fast


def _llama(tok, **over):
    cfg = {"vocab_size": len(tok), "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 1,
           "num_attention_heads": 2, "num_key_value_heads": 2, "max_position_embeddings": 4096,
           "pad_token_id": tok.pad_token_id, "eos_token_id": tok.eos_token_id, "bos_token_id": tok.bos_token_id}
    cfg.update(over)
    return cfg


def _gemma(tok):
    return {"vocab_size": len(tok), "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 1,
            "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 16, "max_position_embeddings": 4096,
            "pad_token_id": tok.pad_token_id, "eos_token_id": tok.eos_token_id, "bos_token_id": tok.bos_token_id}


def _save(path: Path, model, proc, tok, seed: int) -> Path:
    model.generation_config.pad_token_id = tok.pad_token_id
    model.generation_config.eos_token_id = tok.eos_token_id
    path.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(path)
    proc.save_pretrained(path)
    return path


LLAMA2_SPECIALS = ["<unk>", "<s>", "</s>", "<pad>", "<image>"]


def build_llava(path: Path, seed: int = 0) -> Path:
    """LLaVA-1.5 (llava-hf/llava-1.5-7b-hf): CLIP tower (16 px, 8 px patches -> 4 + 1 tokens), Llama-2 text
    whose tokenizer adds <s>; the real template renders every image first."""
    import torch
    from transformers import CLIPImageProcessor, LlavaConfig, LlavaForConditionalGeneration, LlavaProcessor

    tok = _tokenizer(LLAMA2_SPECIALS, bos="<s>", eos="</s>", pad="<pad>", unk="<unk>")
    config = LlavaConfig(
        vision_config={"model_type": "clip_vision_model", "hidden_size": 16, "intermediate_size": 32,
                       "num_hidden_layers": 1, "num_attention_heads": 2, "image_size": 16, "patch_size": 8,
                       "projection_dim": 16},
        text_config={"model_type": "llama", **_llama(tok)}, image_token_index=tok.convert_tokens_to_ids("<image>"),
        vision_feature_layer=-1, vision_feature_select_strategy="default", projector_hidden_act="gelu")
    torch.manual_seed(seed)
    model = LlavaForConditionalGeneration(config).eval()
    improc = CLIPImageProcessor(size={"shortest_edge": 16}, crop_size={"height": 16, "width": 16})
    proc = LlavaProcessor(image_processor=improc, tokenizer=tok, patch_size=8, vision_feature_select_strategy="default",
                          chat_template=template("llava-1.5"), num_additional_image_tokens=1)
    return _save(path, model, proc, tok, seed)


def build_llava_next(path: Path, seed: int = 0) -> Path:
    """LLaVA-NeXT (llava-hf/llava-v1.6-vicuna-7b-hf): anyres tiling over 16 px tiles; the template renders
    every image first and adds no BOS (the tokenizer does)."""
    import torch
    from transformers import (
        LlavaNextConfig,
        LlavaNextForConditionalGeneration,
        LlavaNextImageProcessor,
        LlavaNextProcessor,
    )

    tok = _tokenizer(LLAMA2_SPECIALS, bos="<s>", eos="</s>", pad="<pad>", unk="<unk>")
    pinpoints = [[16, 16], [16, 32], [32, 16]]
    config = LlavaNextConfig(
        vision_config={"model_type": "clip_vision_model", "hidden_size": 16, "intermediate_size": 32,
                       "num_hidden_layers": 1, "num_attention_heads": 2, "image_size": 16, "patch_size": 8,
                       "projection_dim": 16},
        text_config={"model_type": "llama", **_llama(tok)}, image_token_index=tok.convert_tokens_to_ids("<image>"),
        vision_feature_layer=-1, vision_feature_select_strategy="default", image_grid_pinpoints=pinpoints)
    torch.manual_seed(seed)
    model = LlavaNextForConditionalGeneration(config).eval()
    improc = LlavaNextImageProcessor(size={"shortest_edge": 16}, crop_size={"height": 16, "width": 16},
                                     image_grid_pinpoints=pinpoints)
    proc = LlavaNextProcessor(image_processor=improc, tokenizer=tok, patch_size=8,
                              vision_feature_select_strategy="default", chat_template=template("llava-next"),
                              num_additional_image_tokens=1)
    return _save(path, model, proc, tok, seed)


def build_gemma3(path: Path, seed: int = 0) -> Path:
    """Gemma 3 (google/gemma-3-4b-it): SigLIP tower pooled to 4 tokens, Gemma 3 text; the tokenizer adds <bos>
    and so does the template ("{{ bos_token }}"): the runner must not add a second."""
    import torch
    from transformers import (
        Gemma3Config,
        Gemma3ForConditionalGeneration,
        Gemma3ImageProcessor,
        Gemma3Processor,
    )

    specials = ["<pad>", "<eos>", "<bos>", "<unk>", "<start_of_turn>", "<end_of_turn>", "<start_of_image>",
                "<end_of_image>", "<image_soft_token>"]
    tok = _tokenizer(specials, bos="<bos>", eos="<eos>", pad="<pad>", unk="<unk>",
                     extra={"boi_token": "<start_of_image>", "eoi_token": "<end_of_image>",
                            "image_token": "<image_soft_token>"})
    ids = {s: tok.convert_tokens_to_ids(s) for s in specials}
    config = Gemma3Config(
        text_config={**_gemma(tok), "sliding_window": 64},
        vision_config={"hidden_size": 16, "intermediate_size": 32, "num_hidden_layers": 1, "num_attention_heads": 2,
                       "image_size": 16, "patch_size": 4},
        mm_tokens_per_image=4, boi_token_index=ids["<start_of_image>"], eoi_token_index=ids["<end_of_image>"],
        image_token_index=ids["<image_soft_token>"])
    torch.manual_seed(seed)
    model = Gemma3ForConditionalGeneration(config).eval()
    model.generation_config.eos_token_id = [tok.eos_token_id, ids["<end_of_turn>"]]
    improc = Gemma3ImageProcessor(size={"height": 16, "width": 16})
    proc = Gemma3Processor(image_processor=improc, tokenizer=tok, chat_template=template("gemma-3"), image_seq_length=4)
    path = _save(path, model, proc, tok, seed)
    model.generation_config.save_pretrained(path)
    return path


def build_idefics3(path: Path, seed: int = 0) -> Path:
    """Idefics3 (HuggingFaceM4/Idefics3-8B-Llama3): SigLIP tower, pixel shuffle (scale 2) -> 1 token per 16 px
    image, Llama 3 text whose tokenizer adds <|begin_of_text|>, which the template writes too."""
    import torch
    from transformers import (
        Idefics3Config,
        Idefics3ForConditionalGeneration,
        Idefics3ImageProcessor,
        Idefics3Processor,
    )

    rowcol = [f"<row_{i + 1}_col_{j + 1}>" for i in range(6) for j in range(6)]
    specials = ["<|begin_of_text|>", "<|end_of_text|>", "<|finetune_right_pad_id|>", "<fake_token_around_image>",
                "<image>", "<end_of_utterance>", "<global-img>", *rowcol]
    tok = _tokenizer(specials, bos="<|begin_of_text|>", eos="<|end_of_text|>", pad="<|finetune_right_pad_id|>")
    config = Idefics3Config(
        vision_config={"hidden_size": 16, "intermediate_size": 32, "num_hidden_layers": 1, "num_attention_heads": 2,
                       "image_size": 16, "patch_size": 8},
        text_config={"model_type": "llama", **_llama(tok)}, image_token_id=tok.convert_tokens_to_ids("<image>"),
        scale_factor=2)
    torch.manual_seed(seed)
    model = Idefics3ForConditionalGeneration(config).eval()
    model.generation_config.eos_token_id = [tok.eos_token_id, tok.convert_tokens_to_ids("<end_of_utterance>")]
    improc = Idefics3ImageProcessor(do_image_splitting=False, size={"longest_edge": 16},
                                    max_image_size={"longest_edge": 16})
    proc = Idefics3Processor(image_processor=improc, tokenizer=tok, image_seq_len=1, chat_template=template("idefics3"))
    path = _save(path, model, proc, tok, seed)
    model.generation_config.save_pretrained(path)
    return path


def build_paligemma(path: Path, seed: int = 0) -> Path:
    """PaliGemma (google/paligemma-3b-mix-224): SigLIP tower, Gemma text, no chat template; its processor's
    plain format is `<image> * n + <bos> + prompt + "\n"` (it switches the tokenizer's own BOS off)."""
    import torch
    from transformers import (
        PaliGemmaConfig,
        PaliGemmaForConditionalGeneration,
        PaliGemmaProcessor,
        SiglipImageProcessor,
    )

    specials = ["<pad>", "<eos>", "<bos>", "<unk>", "<image>"]
    tok = _tokenizer(specials, bos="<bos>", eos="<eos>", pad="<pad>", unk="<unk>", extra={"image_token": "<image>"})
    config = PaliGemmaConfig(
        vision_config={"model_type": "siglip_vision_model", "hidden_size": 16, "intermediate_size": 32,
                       "num_hidden_layers": 1, "num_attention_heads": 2, "image_size": 16, "patch_size": 8,
                       "projection_dim": 32},
        text_config={"model_type": "gemma", **_gemma(tok)}, image_token_index=tok.convert_tokens_to_ids("<image>"),
        projection_dim=32, hidden_size=32)
    torch.manual_seed(seed)
    model = PaliGemmaForConditionalGeneration(config).eval()
    improc = SiglipImageProcessor(size={"height": 16, "width": 16})
    improc.image_seq_length = 4
    proc = PaliGemmaProcessor(image_processor=improc, tokenizer=tok)
    return _save(path, model, proc, tok, seed)


BUILDERS = {"llava": build_llava, "llava_next": build_llava_next, "gemma3": build_gemma3, "idefics3": build_idefics3,
            "paligemma": build_paligemma}


def write_qwen2vl(path: Path) -> Path:
    """A Qwen2-VL-style checkpoint folder without weights: config, tokenizer and processor config. Its processor
    builds a video processor that needs torchvision, so where torchvision is missing it fails at processor
    load, before any weight is read."""
    from transformers import Qwen2VLConfig

    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|vision_start|>", "<|vision_end|>", "<|image_pad|>",
                "<|video_pad|>"]
    tok = _tokenizer(specials, bos="<|endoftext|>", eos="<|im_end|>", pad="<|endoftext|>", add_bos=False)
    path.mkdir(parents=True, exist_ok=True)
    tok.save_pretrained(path)
    ids = {s: tok.convert_tokens_to_ids(s) for s in specials}
    Qwen2VLConfig(text_config={"vocab_size": len(tok), "hidden_size": 32, "num_hidden_layers": 1,
                               "num_attention_heads": 2, "num_key_value_heads": 1, "intermediate_size": 64},
                  vision_config={"depth": 1, "embed_dim": 16, "num_heads": 2, "hidden_size": 32},
                  image_token_id=ids["<|image_pad|>"], video_token_id=ids["<|video_pad|>"],
                  vision_start_token_id=ids["<|vision_start|>"], bos_token_id=None,
                  eos_token_id=ids["<|im_end|>"]).save_pretrained(path)
    (path / "preprocessor_config.json").write_text(json.dumps({
        "image_processor_type": "Qwen2VLImageProcessor", "processor_class": "Qwen2VLProcessor", "min_pixels": 3136,
        "max_pixels": 12544, "patch_size": 14, "merge_size": 2, "temporal_patch_size": 2}), encoding="utf-8")
    return path


def write_smolvlm(path: Path) -> Path:
    """A SmolVLM-style checkpoint folder without weights. Its processor needs torchvision (video processor) and
    num2words (it spells out frame counts): where either is missing it fails at processor load."""
    from transformers import SmolVLMConfig

    specials = ["<|im_start|>", "<end_of_utterance>", "<fake_token_around_image>", "<image>", "<global-img>",
                "<|endoftext|>"]
    tok = _tokenizer(specials, bos="<|im_start|>", eos="<end_of_utterance>", pad="<|endoftext|>")
    path.mkdir(parents=True, exist_ok=True)
    tok.save_pretrained(path)
    SmolVLMConfig(text_config={"vocab_size": len(tok), "hidden_size": 32, "num_hidden_layers": 1,
                               "num_attention_heads": 2, "num_key_value_heads": 1, "intermediate_size": 64},
                  vision_config={"hidden_size": 16, "num_hidden_layers": 1, "num_attention_heads": 2,
                                 "intermediate_size": 32, "image_size": 16, "patch_size": 8}).save_pretrained(path)
    (path / "preprocessor_config.json").write_text(json.dumps({
        "image_processor_type": "SmolVLMImageProcessor", "processor_class": "SmolVLMProcessor"}), encoding="utf-8")
    (path / "processor_config.json").write_text(json.dumps({"processor_class": "SmolVLMProcessor",
                                                            "image_seq_len": 1}), encoding="utf-8")
    return path


def write_benchmark(folder: Path, n_groups: int = 3, per_group: int = 3, n_images: int = 3, splits: tuple[str, ...] = ("train", "test"),
                    family: str = "generic", name: str = "tiny", question: str = "Which direction is it?") -> Path:
    """A small multi-image items JSONL (generic family) with distinct PNGs per group, for end-to-end runs.

    Item ids are "<split>-g<group>-<i>"; every item shows `n_images` images whose colours encode (group, index),
    so image order can be checked from the bytes a runner sends."""
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
