#!/usr/bin/env bash
# Torch for this machine, run by `make run` / `make test` after requirements.txt (docs/RUNNERS.md, README):
# - an NVIDIA GPU (nvidia-smi answers): the CUDA build of the pinned torch and the matching pinned torchvision
#   (the processors of Qwen2/2.5/3-VL, LLaVA-OneVision, InternVL, GLM-4.1V, SmolVLM, MiniCPM-V, Mistral 3,
#   Llama 4 need torchvision; PyPI's torchvision wheel is built for PyPI's CUDA torch);
# - no NVIDIA GPU: the CPU torch of requirements.txt stays exactly as it is, and no torchvision.
# Usage: scripts/torch-setup.sh [PYTHON] [--cuda]   (--cuda: as if nvidia-smi answered; `make torch-cuda`)
# CROSSCHECK_TORCH_DRY_RUN=1 prints the commands instead of running them.
# The CUDA install reads no pip config file and no PIP_FIND_LINKS, so that a local CPU wheel of the same
# version (2.13.0+cpu sorts above 2.13.0) is not picked again; CROSSCHECK_TORCH_PIP_ARGS adds pip arguments
# (an --index-url of a mirror, say).
set -euo pipefail
PY=.venv/bin/python
FORCE=
for a in "$@"; do
  case "$a" in
    --cuda) FORCE=1 ;;
    *) PY=$a ;;
  esac
done
TORCH=2.13.0
TORCHVISION=0.28.0  # its wheel requires torch==2.13.0
run() { if [ -n "${CROSSCHECK_TORCH_DRY_RUN:-}" ]; then echo "+ $*"; else "$@"; fi; }

if [ -z "$FORCE" ] && ! { command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; }; then
  echo "torch: no NVIDIA GPU (nvidia-smi does not answer): keeping the CPU torch $TORCH, without torchvision"
  exit 0
fi
have=$("$PY" -c 'import torch, torchvision; print(torch.__version__, torch.version.cuda or "", torchvision.__version__)' \
       2>/dev/null || true)
if [ -n "$have" ] && [ "${have%% *}" = "$TORCH" ] && [ "$(echo "$have" | cut -d' ' -f2)" != "" ] \
   && [ "${have##* }" = "$TORCHVISION" ]; then
  echo "torch: NVIDIA GPU: CUDA torch $TORCH and torchvision $TORCHVISION already installed"
  exit 0
fi
echo "torch: NVIDIA GPU: installing the CUDA build of torch $TORCH and torchvision $TORCHVISION"
cuda=$("$PY" -c 'import torch; print(torch.version.cuda or "")' 2>/dev/null || true)
if [ -z "$cuda" ]; then
  run "$PY" -m pip uninstall -y -q torch torchvision
fi
# shellcheck disable=SC2086
run env -u PIP_FIND_LINKS PIP_CONFIG_FILE=/dev/null "$PY" -m pip install -q --disable-pip-version-check \
  -c requirements.txt ${CROSSCHECK_TORCH_PIP_ARGS:-} "torch==$TORCH" "torchvision==$TORCHVISION"
